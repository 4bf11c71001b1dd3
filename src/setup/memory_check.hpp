// A deck that asks for more memory than a rank has (`model.hidden = 100000000`,
// `data.samples = 100000000000`) is refused with a line naming the option, before anything is
// allocated: otherwise LibTorch's allocator throws from deep inside a constructor, or the kernel
// kills the job without a word.
#pragma once

#include "comm/host_group.hpp"
#include "config/config.hpp"
#include "data/dataset.hpp"
#include "ddp/sharding_plan.hpp"
#include "runtime/job.hpp"

namespace ddpt {

// Collective over `group` (every rank decides on the smallest memory per rank of any node,
// so all raise the same OutOfMemoryError, exit 6, naming the ddp.zero level that would fit where
// one would). Memory per rank: the node's MemAvailable (or cgroup limit) shared by its ranks, or
// the rank's own resource limit (prlimit), whichever is less. `data`: what the deck's data will be
// (deck_data_info). Counts only memory that certainly exists (synthetic data held in memory; on
// the CPU the fp32 weights, gradients and optimizer moments): a lower bound, so a run that fits
// is never refused. `plan`: what ZeRO shards (setup/sharding.hpp); the advice weighs the stages
// above it.
void check_host_memory(const Config& config, const ShardingPlan& plan, const DatasetInfo& data,
                       const Job& job, HostGroup& group);

}  // namespace ddpt
