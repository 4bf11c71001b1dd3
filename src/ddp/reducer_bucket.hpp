// One gradient bucket of the Reducer (ddp/reducer.hpp): the flat buffer its parameters' slots
// are views of, and what its reduction (ddp/bucket_reduction.hpp) sends and where the sum lands.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <memory>

#include "comm/communicator.hpp"

namespace ddpt {

struct ReducerBucket {
  // Flat, on the communicator's device (ZeRO-1 and 2: padded). ZeRO-2: a pooled buffer's front,
  // borrowed from the bucket's first gradient to the end of its reduction.
  torch::Tensor buffer;
  torch::Tensor wire;  // ddp.compress: the buffer in the wire precision (else undefined)
  // ZeRO-1: the sum of this rank's block (else undefined); in shared memory, that block of the
  // buffer itself, where the sum lands.
  torch::Tensor shard_gradient;
  torch::Tensor shard_wire;  // ZeRO-1 with ddp.compress: that block in the wire precision
  // ZeRO-2: where the reduce-scatter lands (pooled), before it is added into shard_gradient.
  torch::Tensor landing;
  int pool_entry = -1;  // ZeRO-2: the pooled buffers borrowed, or -1
  // ZeRO-2: one parameter alone, whose buffers are its own for one backward (no pool entry the
  // size of the largest parameter): the gradient backward made for it where that can be sent as
  // it is, and the all-gather into the parameter itself where no padding is needed.
  bool direct = false;
  bool shard_written = false;  // ZeRO-2: shard_gradient holds this step's sum so far
  double squares = 0;          // ZeRO-1 in shared memory: the sum's sum of squares
  size_t pending = 0;          // parameters not yet ready in this backward
  std::shared_ptr<Work> work;
};

}  // namespace ddpt
