// The learning rate of every optimizer step, a pure function of the step (so a resumed run needs
// no schedule state to continue exactly): linear warmup, then constant, cosine decay to min_lr,
// or step decay.
#pragma once

#include <cstdint>
#include <string>

#include "config/sections.hpp"

namespace ddpt {

class LrSchedule {
 public:
  // `total_steps`: train.steps, the cosine decay's end when optim.decay_steps is 0.
  LrSchedule(const OptimConfig& config, int64_t total_steps);
  // Learning rate of optimizer step `step` (0 = the first step).
  double lr_at(int64_t step) const;
  std::string describe() const;

 private:
  OptimConfig config_;
  int64_t decay_end_;
};

}  // namespace ddpt
