#include "config/batch_size.hpp"

#include <stdexcept>
#include <string>

#include "util/error.hpp"

namespace ddpt {
namespace {

// train.batch_size = auto, before `train` found the number.
bool unresolved_auto(const TrainConfig& train) {
  return train.batch_size_auto && train.batch_size == 0;
}

}  // namespace

int64_t per_rank_batch(const TrainConfig& train, int world_size) {
  if (unresolved_auto(train)) {
    throw std::logic_error("train.batch_size = auto was not resolved (run/batch_size_search)");
  }
  if (train.global_batch == 0) return train.batch_size;
  const int64_t shares = static_cast<int64_t>(world_size) * train.grad_accum;
  if (train.global_batch % shares != 0) {
    throw ConfigError("train.global_batch = " + std::to_string(train.global_batch) +
                      " does not divide evenly over " + std::to_string(world_size) + " ranks x " +
                      std::to_string(train.grad_accum) + " micro-steps");
  }
  return train.global_batch / shares;
}

int64_t eval_batch_size(const EvalConfig& eval, const TrainConfig& train, int world_size) {
  if (eval.batch_size == 0 && unresolved_auto(train)) {
    throw ConfigError(
        "option 'eval.batch_size' = 0 means train.batch_size, which is auto: only `ddptrain "
        "train` finds that one; set eval.batch_size");
  }
  return eval.batch_size > 0 ? eval.batch_size : per_rank_batch(train, world_size);
}

}  // namespace ddpt
