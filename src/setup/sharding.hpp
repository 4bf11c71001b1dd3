// The sharding plan of a run (ddp/sharding_plan.hpp), resolved once from the deck, the world
// size, the backend and the moving average, and handed to every part that behaves by it.
#pragma once

#include <torch/torch.h>

#include "config/config.hpp"
#include "ddp/sharding_plan.hpp"

namespace ddpt {

// The plan of `config` on `world_size` ranks whose communicator serves `device` (the backend
// decides ZeRO-3's prefetch: comm/make_communicator.hpp's resolved_backend).
ShardingPlan plan_sharding(const Config& config, int world_size, torch::Device device);

}  // namespace ddpt
