// The loss-spike guard (train.spike_factor): a step whose loss, averaged over all ranks, exceeds
// spike_factor x the running mean of the losses before it is skipped, and the learning rate is
// multiplied by spike_lr_factor from then on. The running mean is exponential with span
// train.spike_window (alpha = 2 / (window + 1)); the guard judges only once that many steps have
// been seen. Every rank feeds it the same reduced loss, so every rank decides alike.
#pragma once

#include <cstdint>

#include "config/config.hpp"

namespace ddpt {

class SpikeGuard {
 public:
  explicit SpikeGuard(const TrainConfig& train);
  bool enabled() const { return factor_ > 0; }
  // Judges the step's global loss: true = a spike (skip the step; the LR factor has been lowered).
  // Spikes do not enter the running mean.
  bool is_spike(double loss);
  // Multiplies the schedule's learning rate.
  double lr_factor() const { return lr_factor_; }
  // Checkpointed state.
  double& mean_state() { return mean_; }
  double& seen_state() { return seen_; }
  double& lr_factor_state() { return lr_factor_; }

 private:
  double factor_;
  double lr_cut_;
  double window_;
  double mean_ = 0;
  double seen_ = 0;  // losses that entered the mean
  double lr_factor_ = 1;
};

}  // namespace ddpt
