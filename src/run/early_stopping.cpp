#include "run/early_stopping.hpp"

namespace ddpt {

bool EarlyStopping::should_stop(double eval_loss) {
  if (eval_loss < best_loss_ - min_delta_) {
    best_loss_ = eval_loss;
    evals_without_improvement_ = 0;
  } else {
    ++evals_without_improvement_;
  }
  return enabled() && evals_without_improvement_ >= patience_;
}

void EarlyStopping::save(StateWriter& root) const {
  const auto loop = root.group("loop");
  loop->scalar("early_stop_best_loss", best_loss_);
  loop->scalar("early_stop_evals", evals_without_improvement_);
}

void EarlyStopping::load(const StateReader& root) {
  if (!root.has("loop")) return;
  const auto loop = root.group("loop");
  if (loop->has("early_stop_best_loss")) best_loss_ = loop->double_scalar("early_stop_best_loss");
  if (loop->has("early_stop_evals"))
    evals_without_improvement_ = loop->int_scalar("early_stop_evals");
}

}  // namespace ddpt
