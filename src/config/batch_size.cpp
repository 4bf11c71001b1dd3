#include "config/batch_size.hpp"

#include <string>

#include "util/error.hpp"

namespace ddpt {

int64_t per_rank_batch(const TrainConfig& train, int world_size) {
  if (train.global_batch == 0) return train.batch_size;
  const int64_t shares = static_cast<int64_t>(world_size) * train.grad_accum;
  if (train.global_batch % shares != 0) {
    throw ConfigError("train.global_batch = " + std::to_string(train.global_batch) +
                      " does not divide evenly over " + std::to_string(world_size) + " ranks x " +
                      std::to_string(train.grad_accum) + " micro-steps");
  }
  return train.global_batch / shares;
}

int64_t eval_batch_size(const Config& config, int world_size) {
  return config.eval.batch_size > 0 ? config.eval.batch_size
                                    : per_rank_batch(config.train, world_size);
}

}  // namespace ddpt
