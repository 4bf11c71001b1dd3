#include "step/spike_guard.hpp"

namespace ddpt {

SpikeGuard::SpikeGuard(const SpikeGuardOptions& options)
    : factor_(options.factor), lr_cut_(options.lr_factor), window_(options.window) {}

bool SpikeGuard::is_spike(double loss) {
  if (!enabled()) return false;
  if (seen_ >= window_ && loss > factor_ * mean_) {
    lr_factor_ *= lr_cut_;
    return true;
  }
  const double alpha = 2.0 / (static_cast<double>(window_) + 1.0);
  mean_ = seen_ == 0 ? loss : mean_ + alpha * (loss - mean_);
  ++seen_;
  return false;
}

void SpikeGuard::save(StateWriter& root) const {
  const auto loop = root.group("loop");
  loop->scalar("spike_mean", mean_);
  loop->scalar("spike_seen", seen_);
  loop->scalar("spike_lr_factor", lr_factor_);
}

void SpikeGuard::load(const StateReader& root) {
  if (!root.has("loop")) return;
  const auto loop = root.group("loop");
  if (loop->has("spike_mean")) mean_ = loop->double_scalar("spike_mean");
  if (loop->has("spike_seen")) seen_ = loop->int_scalar("spike_seen");
  if (loop->has("spike_lr_factor")) lr_factor_ = loop->double_scalar("spike_lr_factor");
}

}  // namespace ddpt
