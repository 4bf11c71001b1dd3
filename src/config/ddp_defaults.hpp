// Defaults and limits of the ddp.* options: the one definition, for the options (config.hpp) and
// for the data-parallel engine's own defaults (ddp/data_parallel.hpp). Here, in config/, because
// config/ sits below ddp/ and may not include it.
#pragma once

#include <cstdint>

namespace ddpt {

// PyTorch DDP's defaults: 25 MiB buckets, and a 1 MiB first bucket so that communication starts
// early in backward.
constexpr double kDefaultBucketMiB = 25.0;
constexpr double kDefaultFirstBucketMiB = 1.0;

// The highest ddp.zero stage there is (3: optimizer state, gradients and parameters sharded).
constexpr int64_t kHighestZeroStage = 3;

}  // namespace ddpt
