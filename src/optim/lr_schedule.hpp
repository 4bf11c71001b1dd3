// The learning rate of every optimizer step, a pure function of the step (so a resumed run needs
// no schedule state to continue exactly): linear warmup, then constant, cosine decay to min_lr,
// or step decay.
#pragma once

#include <cstdint>
#include <string>

#include "config/choices.hpp"

namespace ddpt {

// The schedule's shape: optim.lr, optim.warmup, optim.schedule and its settings.
struct LrScheduleSpec {
  LrScheduleType type = LrScheduleType::kConstant;
  double peak = 1e-3;        // the learning rate after warmup
  int64_t warmup = 0;        // steps of linear warmup from peak / warmup to peak
  double min_lr = 0.0;       // cosine: the learning rate from decay_end on
  int64_t decay_end = 0;     // cosine: the step min_lr is reached
  int64_t step_size = 1000;  // step: steps between decays
  double gamma = 0.1;        // step: factor per decay
};

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleSpec& spec) : spec_(spec) {}
  // Learning rate of optimizer step `step` (0 = the first step).
  double lr_at(int64_t step) const;
  std::string describe() const;

 private:
  LrScheduleSpec spec_;
};

}  // namespace ddpt
