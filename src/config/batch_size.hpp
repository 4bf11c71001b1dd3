// Batch sizes that follow from the deck and the world size.
#pragma once

#include <cstdint>

#include "config/sections.hpp"

namespace ddpt {

// Samples per rank per micro-step: train.batch_size, or train.global_batch split over ranks and
// micro-steps (ConfigError if it does not divide evenly). train.batch_size = auto must have been
// resolved first (run/batch_size_search.hpp).
int64_t per_rank_batch(const TrainConfig& train, int world_size);

// Rows per rank per evaluation or prediction batch: eval.batch_size, or when that is 0 the
// training batch per rank (the one default of `train`, `eval` and `predict`; ConfigError when that
// is an unresolved auto).
int64_t eval_batch_size(const EvalConfig& eval, const TrainConfig& train, int world_size);

}  // namespace ddpt
