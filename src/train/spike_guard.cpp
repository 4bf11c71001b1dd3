#include "train/spike_guard.hpp"

namespace ddpt {

SpikeGuard::SpikeGuard(const TrainConfig& train)
    : factor_(train.spike_factor),
      lr_cut_(train.spike_lr_factor),
      window_(static_cast<double>(train.spike_window)) {}

bool SpikeGuard::is_spike(double loss) {
  if (!enabled()) return false;
  if (seen_ >= window_ && loss > factor_ * mean_) {
    lr_factor_ *= lr_cut_;
    return true;
  }
  const double alpha = 2.0 / (window_ + 1.0);
  mean_ = seen_ == 0 ? loss : mean_ + alpha * (loss - mean_);
  ++seen_;
  return false;
}

}  // namespace ddpt
