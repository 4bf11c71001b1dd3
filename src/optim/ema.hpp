// Exponential moving average of the trainable parameters (train.ema_decay): after every optimizer
// step, average = decay x average + (1 - decay) x parameter. Every rank holds the same parameters
// (or, with ZeRO-3, its shard of them) after a step, so every rank keeps the average of what it
// holds without communicating. Evaluation uses the average when it is on; checkpoints save it
// (/ema, in the parameters' shapes whatever the sharding), so a resumed run continues it exactly.
#pragma once

#include <memory>
#include <vector>

#include "ddp/shard_plan.hpp"
#include "state/checkpointed.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

class Ema : public Checkpointed {
 public:
  // Averages the whole parameters, starting at their current values.
  Ema(const std::vector<NamedTensor>& params, double decay);
  // ZeRO-3: averages this rank's blocks of the parameters, `shards` (ShardedParameters::shards;
  // `plan` says where the parameters' values lie in them), starting at their current values.
  Ema(const std::vector<NamedTensor>& params, const std::vector<BucketShard>& plan,
      const std::vector<torch::Tensor>& shards, double decay);
  // `skipped`: undefined, or a float scalar on the parameters' device: where it is 1 (a step
  // skipped on the device) the average stays as it is.
  void update(const torch::Tensor& skipped = torch::Tensor());
  // Exchanges the live values with the averages (in place); calling it again restores them.
  // With ZeRO-3 the shards change, and the next gather of each unit brings the averages.
  void swap();
  // The averages, in the order of the live values (whole parameters, or ZeRO-3's shards).
  const std::vector<torch::Tensor>& averages() const { return averages_; }
  // /ema, in the parameters' names and shapes. A checkpoint of a run without EMA starts the
  // average at its weights (/model).
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  std::vector<torch::Tensor> live_;
  std::vector<torch::Tensor> averages_;
  std::unique_ptr<CheckpointedWeights> stored_;  // reads and writes averages_
  double decay_;
};

// RAII: the model holds the averaged weights while it lives (evaluation with EMA), then its own.
class EmaWeightsInUse {
 public:
  explicit EmaWeightsInUse(Ema* ema) : ema_(ema) {
    if (ema_) ema_->swap();
  }
  ~EmaWeightsInUse() {
    if (ema_) ema_->swap();
  }
  EmaWeightsInUse(const EmaWeightsInUse&) = delete;
  EmaWeightsInUse& operator=(const EmaWeightsInUse&) = delete;

 private:
  Ema* ema_;
};

}  // namespace ddpt
