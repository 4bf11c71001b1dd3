// Exponential moving average of the trainable parameters (train.ema_decay): after every optimizer
// step, average = decay x average + (1 - decay) x parameter. Every rank holds the same parameters
// after a step, so every rank keeps the same average without communicating. Evaluation uses the
// average when it is on; checkpoints save it (/ema), so a resumed run continues it exactly.
#pragma once

#include <vector>

#include "train/checkpointed.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

class Ema : public Checkpointed {
 public:
  // Starts the average at the parameters' current values.
  Ema(const std::vector<NamedTensor>& params, double decay);
  // `skipped`: undefined, or a float scalar on the parameters' device: where it is 1 (a step
  // skipped on the device) the average stays as it is.
  void update(const torch::Tensor& skipped = torch::Tensor());
  // Exchanges the live parameters with the averages (in place); calling it again restores them.
  void swap();
  // The averages, named like the parameters.
  const std::vector<NamedTensor>& averages() const { return averages_; }
  // /ema, one tensor per parameter. A checkpoint of a run without EMA starts the average at its
  // weights (/model).
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  std::vector<NamedTensor> params_;
  std::vector<NamedTensor> averages_;
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
