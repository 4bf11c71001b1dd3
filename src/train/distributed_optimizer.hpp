// How the ranks update the parameters once the gradients are reduced: every rank updates all of
// them with the whole optimizer state (ReplicatedOptimizer, ddp.zero = 0), or each rank its own
// shard with the state of that shard only (ShardedOptimizer, ddp.zero = 1, ZeRO-1). Either way
// the optimizer is one of make_optimizer's, and checkpoints hold the same /optimizer group, so a
// checkpoint of one loads into the other, on any number of ranks.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "config/config.hpp"
#include "ddp/reducer.hpp"
#include "train/checkpointed.hpp"
#include "train/optimizer_state.hpp"
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
};

// Every rank holds the whole state and updates every parameter alike.
class ReplicatedOptimizer final : public DistributedOptimizer {
 public:
  ReplicatedOptimizer(const OptimConfig& config, const std::vector<NamedTensor>& params);
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  void step() override { optimizer_->step(); }
  int64_t updated_values() const override { return values_; }
  void save(StateWriter& root) const override { checkpoint_->save(root); }
  void load(const StateReader& root) override { checkpoint_->load(root); }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<OptimizerCheckpoint> checkpoint_;
  int64_t values_ = 0;
};

// ddp.zero picks the kind; with ZeRO-1 `reducer` must reduce-scatter (Reducer::sharded()).
std::unique_ptr<DistributedOptimizer> make_distributed_optimizer(
    const Config& config, const std::vector<NamedTensor>& params, Reducer& reducer);

}  // namespace ddpt
