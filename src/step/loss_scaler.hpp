// Dynamic loss scaling for fp16 (as torch.cuda.amp.GradScaler): the loss is multiplied by a large
// scale so small gradients survive fp16; the averaged gradients are divided by it again before
// the optimizer. A step whose gradients overflowed is skipped and the scale shrinks; after
// `growth_interval` good steps in a row it doubles. Every rank sees the same averaged gradients,
// so every rank makes the same decisions without talking.
#pragma once

#include <cstdint>

#include "state/checkpointed.hpp"

namespace ddpt {

class LossScaler : public Checkpointed {
 public:
  LossScaler(double initial_scale, int64_t growth_interval, double backoff);
  double scale() const { return scale_; }
  // After each step: whether its averaged gradients were finite.
  void update(bool finite);
  // /loop: loss_scale, loss_scale_good_steps; a resumed run continues with the same scale.
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  double scale_;
  int64_t good_steps_ = 0;  // good steps since the last change
  int64_t growth_interval_;
  double backoff_;
};

}  // namespace ddpt
