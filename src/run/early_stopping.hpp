// Early stopping (train.patience): the best validation loss so far and the evaluations since it
// improved by more than train.min_delta. Every rank feeds it the same reduced loss, so every rank
// decides alike. Checkpointed, so a resumed run keeps counting.
#pragma once

#include <cstdint>
#include <limits>

#include "state/checkpointed.hpp"

namespace ddpt {

struct EarlyStoppingOptions {
  int64_t patience = 0;  // evaluations without improvement before the run stops; 0: off
  double min_delta = 0.0;
};

class EarlyStopping : public Checkpointed {
 public:
  explicit EarlyStopping(const EarlyStoppingOptions& options)
      : patience_(options.patience), min_delta_(options.min_delta) {}
  bool enabled() const { return patience_ > 0; }
  // Counts one evaluation's loss; true once train.patience evaluations in a row did not improve.
  bool should_stop(double eval_loss);
  int64_t evals_without_improvement() const { return evals_without_improvement_; }

  // /loop: early_stop_best_loss, early_stop_evals.
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  int64_t patience_;
  double min_delta_;
  double best_loss_ = std::numeric_limits<double>::infinity();
  int64_t evals_without_improvement_ = 0;
};

}  // namespace ddpt
