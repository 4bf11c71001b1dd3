#include "step/loss_scaler.hpp"

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
  if (++good_steps_ >= growth_interval_) {
    scale_ *= kGrowth;
    good_steps_ = 0;
  }
}

void LossScaler::save(StateWriter& root) const {
  const auto loop = root.group("loop");
  loop->scalar("loss_scale", scale_);
  loop->scalar("loss_scale_good_steps", good_steps_);
}

void LossScaler::load(const StateReader& root) {
  if (!root.has("loop")) return;
  const auto loop = root.group("loop");
  if (loop->has("loss_scale")) scale_ = loop->double_scalar("loss_scale");
  if (loop->has("loss_scale_good_steps")) good_steps_ = loop->int_scalar("loss_scale_good_steps");
}

}  // namespace ddpt
