// ZeRO-3 under autocast (train.precision = bf16 or fp16): a unit's weights in autocast's type live
// as the unit does. See design.md, "ZeRO-3", for why: left to autocast, each weight's cast stays
// in autocast's cache until the forward ends and in what the matrix products saved for backward
// until the unit's backward, so a rank would hold the whole model in autocast's type. (Operations
// must hand autocast the weight itself, not a view of it, whose cast autocast never caches:
// models/linear.cpp.)
//
// When a unit is gathered in a forward under autocast, its weights are cast here, into one flat
// buffer per bucket, and autocast's cache is handed these casts before the unit's operations ask
// for them: at::autocast::cached_cast makes the cache's entry for each weight, and set_data points
// the entry's memory at the weight's part of the buffer (the cast keeps its identity, which the
// cache, autograd and what the operations save refer to; as the parameters are views of the
// unit's gathered buffer, ddp/sharded_parameters.hpp). The buffer's memory goes when the unit is
// released and is cast again from the gathered weights before the unit's backward, where anything
// saved the casts (util/releasable_storage.hpp); a cast whose memory is gone is never read in
// between, since the unit's weights are gone with it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "util/releasable_storage.hpp"

namespace ddpt {

class UnitCasts {
 public:
  explicit UnitCasts(size_t buckets) : flats_(buckets) {}

  // Bucket `bucket` was gathered into `gathered`, its parameters `params` viewing it at
  // `offsets`: where autocast is on for its device, their casts made from it and put in
  // autocast's cache. Nothing otherwise.
  void cast(size_t bucket, const torch::Tensor& gathered, const std::vector<torch::Tensor>& params,
            const std::vector<int64_t>& offsets);
  // Gathered again for its backward: the casts made again where what autograd saved reads them.
  void restore(size_t bucket, const torch::Tensor& gathered);
  void release(size_t bucket);

 private:
  std::vector<torch::Tensor> flats_;  // by bucket; memory only while the bucket is gathered
  StoragePool memory_;                // the casts' host memory, used again
};

}  // namespace ddpt
