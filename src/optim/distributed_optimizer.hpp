// How the ranks update the parameters once the gradients are reduced: every rank updates all of
// them with the whole optimizer state (ReplicatedOptimizer, ddp.zero = 0), or each rank its own
// shard with the state of that shard only (ShardedOptimizer, ddp.zero = 1, ZeRO-1). Either way
// the optimizer is one of make_optimizer's, and checkpoints hold the same /optimizer group, so a
// checkpoint of one loads into the other, on any number of ranks.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ddp/reducer.hpp"
#include "models/deferred_values.hpp"
#include "optim/fused_adamw.hpp"
#include "optim/optimizer_state.hpp"
#include "state/checkpointed.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

class DistributedOptimizer : public Checkpointed {
 public:
  // The optimizer that steps: its learning rate is set and read through it, and its state is
  // what this rank holds.
  virtual torch::optim::Optimizer& optimizer() = 0;
  // Collective (ZeRO-1): updates the parameters from the reduced gradients.
  virtual void step() = 0;
  // Parameter values whose update (and optimizer state) this rank owns.
  virtual int64_t updated_values() const = 0;
  // The optimizer whose step can be skipped and its gradients clipped on the device
  // (train.step_checks = device), or nullptr.
  virtual FusedAdamW* gated_on_device() { return nullptr; }
};

// Every rank holds the whole state and updates every parameter alike.
class ReplicatedOptimizer final : public DistributedOptimizer {
 public:
  ReplicatedOptimizer(const OptimConfig& config, const std::vector<NamedTensor>& params);
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  void step() override { optimizer_->step(); }
  int64_t updated_values() const override { return values_; }
  FusedAdamW* gated_on_device() override { return dynamic_cast<FusedAdamW*>(optimizer_.get()); }
  void save(StateWriter& root) const override { checkpoint_->save(root); }
  void load(const StateReader& root) override { checkpoint_->load(root); }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<OptimizerCheckpoint> checkpoint_;
  int64_t values_ = 0;
};

// Whether ddp.zero >= 1 shards anything: on one rank there is nothing to shard, and the
// sharded path's reduce-scatter and all-gather would only copy (the scaling MLP's step took
// longer: benchmarks.md, "Choices measured": no ZeRO at one rank). So a one-rank run with ZeRO
// trains unsharded; its checkpoints look the same either way.
inline bool optimizer_sharded(const DdpConfig& ddp, int world_size) {
  return ddp.zero >= 1 && world_size > 1;
}
// Whether the gradients are sharded as well (ZeRO-2).
inline bool gradients_sharded(const DdpConfig& ddp, int world_size) {
  return ddp.zero >= 2 && world_size > 1;
}
// Whether the parameters are sharded as well (ZeRO-3).
inline bool parameters_sharded(const DdpConfig& ddp, int world_size) {
  return ddp.zero >= 3 && world_size > 1;
}
// How training builds a built-in model: under ZeRO-3 with its values deferred, drawn a unit at a
// time as the parameters are sharded, so that no rank ever holds the whole model; else whole.
inline ParameterValues initial_values(const DdpConfig& ddp, int world_size) {
  return parameters_sharded(ddp, world_size) ? ParameterValues::kDeferred
                                             : ParameterValues::kInitialised;
}
// Whether ZeRO-3 prefetches the next unit (ddp.prefetch on the backend `backend_name`). On the
// 2-core VM with MPI, prefetch ran slower than none (benchmarks.md, "Choices measured": ZeRO-3
// prefetch): the communication thread's MPI_Allgather polls on the core the compute needs.
inline bool prefetches(const DdpConfig& ddp, const std::string& backend_name) {
  return ddp.prefetch == Prefetch::kOn ||
         (ddp.prefetch == Prefetch::kAuto && backend_name == "nccl");
}

// The reducer picks the kind: sharded (ZeRO-1) when it reduce-scatters (Reducer::sharded(), which
// the trainer asks for when optimizer_sharded(config.ddp, world size)), else replicated.
std::unique_ptr<DistributedOptimizer> make_distributed_optimizer(
    const OptimConfig& optim, const std::vector<NamedTensor>& params, Reducer& reducer);

}  // namespace ddpt
