// How the ranks update the parameters once the gradients are reduced: every rank updates all of
// them with the whole optimizer state (ReplicatedOptimizer, ddp.zero = 0), or each rank its own
// shard with the state of that shard only (ShardedOptimizer, ddp.zero = 1, ZeRO-1). Either way
// the optimizer is one of make_optimizer's, and checkpoints hold the same /optimizer group, so a
// checkpoint of one loads into the other, on any number of ranks.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "ddp/reducer.hpp"
#include "optim/fused_adamw.hpp"
#include "optim/optimizer.hpp"
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
  ReplicatedOptimizer(const OptimizerSpec& config, const std::vector<NamedTensor>& params);
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

// The reducer picks the kind: sharded (ZeRO-1) when it reduce-scatters (Reducer::sharded(), which
// the trainer asks for when the plan shards the optimizer: ddp/sharding_plan.hpp), else replicated.
std::unique_ptr<DistributedOptimizer> make_distributed_optimizer(
    const OptimizerSpec& optim, const std::vector<NamedTensor>& params, Reducer& reducer);

}  // namespace ddpt
