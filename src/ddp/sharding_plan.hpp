// How a run shards its training state over the ranks (ddp.zero), decided once.
//
// The deck asks for a ZeRO stage; what is at work also depends on the world size (one rank has
// nothing to shard), the backend (ZeRO-3 prefetches with NCCL, not with MPI) and the moving
// average (which swaps itself into the parameters, so the ranks cannot share one copy of them).
// setup/sharding.hpp resolves all of that once, and every part that behaves by the stage (the
// engine's reductions, the optimizer, the model's construction, the memory check, the
// batch-size search's trials, the banner and the summary) reads this plan instead of the deck.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "models/deferred_values.hpp"

namespace ddpt {

// What is sharded, each stage adding to the one before it.
enum class ZeroStage : int {
  kNone = 0,        // plain data parallel: every rank holds everything
  kOptimizer = 1,   // ZeRO-1: each rank keeps the optimizer state of its shard
  kGradients = 2,   // ZeRO-2: and only its shard of the gradients
  kParameters = 3,  // ZeRO-3: and only its shard of the parameters, a unit gathered as it runs
};

struct ShardingPlan {
  ZeroStage stage = ZeroStage::kNone;  // at work: the deck's ddp.zero, or none on one rank
  int64_t requested = 0;               // the deck's ddp.zero
  int shards = 1;                      // the ranks the state is sharded over (the world size)
  // train.ema_decay > 0: the moving average swaps itself into each rank's parameters for
  // evaluation, so the ranks cannot share one copy of them (share_parameters).
  bool moving_average = false;
  // Under ZeRO-3: the next unit's gather is launched before the current unit computes.
  bool prefetch = false;
  // Precision of gradients on the wire (ddp.compress): kFloat as they are, or kBFloat16 / kHalf
  // (each bucket cast before its reduction and back after it).
  torch::ScalarType wire_dtype = torch::kFloat;

  bool optimizer_sharded() const { return stage >= ZeroStage::kOptimizer; }
  bool gradients_sharded() const { return stage >= ZeroStage::kGradients; }
  bool parameters_sharded() const { return stage >= ZeroStage::kParameters; }
  // ZeRO-1 and 2: the ranks of a node share one copy of the parameters where the communicator
  // can and ddp.shared_memory allows (ddp/data_parallel.hpp).
  bool share_parameters() const {
    return optimizer_sharded() && !parameters_sharded() && !moving_average;
  }
  int stage_number() const { return static_cast<int>(stage); }
  // Whether the deck asked for a stage that one rank does not need.
  bool stage_dropped() const { return requested > 0 && stage == ZeroStage::kNone; }

  // How training builds a built-in model: under ZeRO-3 with its values deferred, drawn a unit at
  // a time as the parameters are sharded, so that no rank ever holds the whole model.
  ParameterValues initial_values() const {
    return parameters_sharded() ? ParameterValues::kDeferred : ParameterValues::kInitialised;
  }
  // The same plan at another stage (the memory check's advice weighs each).
  ShardingPlan at_stage(ZeroStage other) const {
    ShardingPlan plan = *this;
    plan.stage = shards > 1 ? other : ZeroStage::kNone;
    return plan;
  }
  // The batch-size search's trial steps: ZeRO-3 as ZeRO-2. ZeRO-3 would leave the model's
  // parameters views of the trial trainer's released units; a trial's local backward makes every
  // gradient whole anyway, so ZeRO-2's trial holds at least what a ZeRO-3 step does.
  ShardingPlan for_trial() const {
    return parameters_sharded() ? at_stage(ZeroStage::kGradients) : *this;
  }
};

}  // namespace ddpt
