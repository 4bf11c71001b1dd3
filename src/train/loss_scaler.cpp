#include "train/loss_scaler.hpp"

namespace ddpt {
namespace {
constexpr double kGrowth = 2.0;  // GradScaler's default growth factor
}

LossScaler::LossScaler(double initial_scale, int64_t growth_interval, double backoff)
    : scale_(initial_scale), growth_interval_(growth_interval), backoff_(backoff) {}

void LossScaler::update(bool finite) {
  if (!finite) {
    scale_ *= backoff_;
    good_steps_ = 0;
    return;
  }
  if (++good_steps_ >= static_cast<double>(growth_interval_)) {
    scale_ *= kGrowth;
    good_steps_ = 0;
  }
}

}  // namespace ddpt
