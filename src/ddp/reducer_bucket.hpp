// One gradient bucket of the Reducer (ddp/reducer.hpp): the flat buffer its parameters' slots
// are views of, which its reduction (ddp/bucket_reduction.hpp) sends. What a mode keeps beyond
// it (ZeRO's shards, the wire copy of a block, the pool's loans) its reduction or the reducer
// keeps by bucket index.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <memory>

#include "comm/communicator.hpp"

namespace ddpt {

struct ReducerBucket {
  // Flat, on the communicator's device (ZeRO: padded to a multiple of the world size). ZeRO-2
  // and 3: borrowed (ddp/pooled_buckets.hpp) from the bucket's first gradient to the end of its
  // reduction.
  torch::Tensor buffer;
  torch::Tensor wire;  // ddp.compress: the buffer in the wire precision (else undefined)
  size_t pending = 0;  // parameters not yet ready in this backward
  std::shared_ptr<Work> work;
};

}  // namespace ddpt
