#include "optim/lr_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ddpt {

LrSchedule::LrSchedule(const OptimConfig& config, int64_t total_steps)
    : config_(config), decay_end_(config.decay_steps > 0 ? config.decay_steps : total_steps) {}

double LrSchedule::lr_at(int64_t step) const {
  const double peak = config_.lr;
  const int64_t warmup = config_.warmup;
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (config_.schedule == LrScheduleType::kCosine) {
    // From peak at the end of warmup to min_lr at decay_end, then min_lr (nanoGPT's schedule).
    if (step >= decay_end_) return config_.min_lr;
    const double progress = static_cast<double>(step - warmup) /
                            static_cast<double>(std::max<int64_t>(decay_end_ - warmup, 1));
    return config_.min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (peak - config_.min_lr);
  }
  if (config_.schedule == LrScheduleType::kStep) {
    return peak * std::pow(config_.gamma, static_cast<double>((step - warmup) / config_.step_size));
  }
  return peak;
}

std::string LrSchedule::describe() const {
  const std::string warmup =
      config_.warmup > 0 ? fmt::format("{} warmup steps, then ", config_.warmup) : "";
  if (config_.schedule == LrScheduleType::kCosine) {
    return fmt::format("{}cosine {} -> {} at step {}", warmup, config_.lr, config_.min_lr,
                       decay_end_);
  }
  if (config_.schedule == LrScheduleType::kStep) {
    return fmt::format("{}{} x {} every {} steps", warmup, config_.lr, config_.gamma,
                       config_.step_size);
  }
  return fmt::format("{}constant {}", warmup, config_.lr);
}

}  // namespace ddpt
