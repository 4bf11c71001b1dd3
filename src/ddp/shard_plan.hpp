// ZeRO-1's division of the flat parameter space over ranks: a pure function of the bucket plan.
// Each bucket is padded to a multiple of the world size and cut into world-size equal blocks;
// rank r owns block r of every bucket (its reduce-scatter output). The parameters overlapping a
// rank's block give its pieces: contiguous runs of a parameter's elements (in row-major order),
// at most one per parameter, since a parameter lies in one bucket and a block is contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "ddp/bucket_plan.hpp"

namespace ddpt {

struct ShardPiece {
  size_t param = 0;          // index into the parameter list
  int64_t param_offset = 0;  // first element of the piece in the flattened parameter
  int64_t block_offset = 0;  // where it sits in this rank's block of the bucket
  int64_t numel = 0;
};

struct BucketShard {
  int64_t block = 0;               // elements per rank (the padded bucket holds block x world size)
  std::vector<ShardPiece> pieces;  // this rank's, in bucket order (empty pieces left out)
};

// One BucketShard per bucket, for `rank` of `world_size`. `param_numels`: elements of each
// parameter, by parameter index.
std::vector<BucketShard> plan_shards(const std::vector<BucketSpec>& buckets,
                                     const std::vector<int64_t>& param_numels, int world_size,
                                     int rank);

}  // namespace ddpt
