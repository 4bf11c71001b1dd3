// The loss-spike guard (train.spike_factor): a step whose loss, averaged over all ranks, exceeds
// spike_factor x the running mean of the losses before it is skipped, and the learning rate is
// multiplied by spike_lr_factor from then on. The running mean is exponential with span
// train.spike_window (alpha = 2 / (window + 1)); the guard judges only once that many steps have
// been seen. Every rank feeds it the same reduced loss, so every rank decides alike.
#pragma once

#include <cstdint>

#include "state/checkpointed.hpp"

namespace ddpt {

// train.spike_factor, train.spike_lr_factor, train.spike_window.
struct SpikeGuardOptions {
  double factor = 0.0;  // 0: off
  double lr_factor = 0.5;
  int64_t window = 50;
};

class SpikeGuard : public Checkpointed {
 public:
  explicit SpikeGuard(const SpikeGuardOptions& options);
  bool enabled() const { return factor_ > 0; }
  // Judges the step's global loss: true = a spike (skip the step; the LR factor has been lowered).
  // Spikes do not enter the running mean.
  bool is_spike(double loss);
  // Multiplies the schedule's learning rate.
  double lr_factor() const { return lr_factor_; }
  // The running mean of the losses judged so far.
  double mean() const { return mean_; }
  // /loop: spike_mean, spike_seen, spike_lr_factor.
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  double factor_;
  double lr_cut_;
  int64_t window_;
  double mean_ = 0;
  int64_t seen_ = 0;  // losses that entered the mean
  double lr_factor_ = 1;
};

}  // namespace ddpt
