#include "ddp/shard_plan.hpp"

#include <algorithm>

namespace ddpt {

std::vector<BucketShard> plan_shards(const std::vector<BucketSpec>& buckets,
                                     const std::vector<int64_t>& param_numels, int world_size,
                                     int rank) {
  std::vector<BucketShard> shards;
  shards.reserve(buckets.size());
  for (const BucketSpec& bucket : buckets) {
    BucketShard shard;
    shard.block = (bucket.numel + world_size - 1) / world_size;
    const int64_t begin = shard.block * rank;
    const int64_t end = begin + shard.block;
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      const size_t param = bucket.params[k];
      const int64_t first = std::max(begin, bucket.offsets[k]);
      const int64_t last = std::min(end, bucket.offsets[k] + param_numels[param]);
      if (first >= last) continue;
      shard.pieces.push_back({param, first - bucket.offsets[k], first - begin, last - first});
    }
    shards.push_back(std::move(shard));
  }
  return shards;
}

}  // namespace ddpt
