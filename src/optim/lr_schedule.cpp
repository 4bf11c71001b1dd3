#include "optim/lr_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ddpt {

double LrSchedule::lr_at(int64_t step) const {
  const double peak = spec_.peak;
  const int64_t warmup = spec_.warmup;
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (spec_.type == LrScheduleType::kCosine) {
    // From peak at the end of warmup to min_lr at decay_end, then min_lr (nanoGPT's schedule).
    if (step >= spec_.decay_end) return spec_.min_lr;
    const double progress = static_cast<double>(step - warmup) /
                            static_cast<double>(std::max<int64_t>(spec_.decay_end - warmup, 1));
    return spec_.min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (peak - spec_.min_lr);
  }
  if (spec_.type == LrScheduleType::kStep) {
    return peak * std::pow(spec_.gamma, static_cast<double>((step - warmup) / spec_.step_size));
  }
  return peak;
}

std::string LrSchedule::describe() const {
  const std::string warmup =
      spec_.warmup > 0 ? fmt::format("{} warmup steps, then ", spec_.warmup) : "";
  if (spec_.type == LrScheduleType::kCosine) {
    return fmt::format("{}cosine {} -> {} at step {}", warmup, spec_.peak, spec_.min_lr,
                       spec_.decay_end);
  }
  if (spec_.type == LrScheduleType::kStep) {
    return fmt::format("{}{} x {} every {} steps", warmup, spec_.peak, spec_.gamma,
                       spec_.step_size);
  }
  return fmt::format("{}constant {}", warmup, spec_.peak);
}

}  // namespace ddpt
