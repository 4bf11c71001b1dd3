// Selective training: model.freeze = "pattern,..." (shell globs on parameter names, as in
// "0.*,embed.weight") stops those parameters from training. Frozen parameters get no gradient,
// so the data-parallel engine neither buckets nor communicates them.
#pragma once

#include <string>

#include "models/model.hpp"

namespace ddpt {

struct FreezeCount {
  int64_t frozen_tensors = 0;
  int64_t frozen_values = 0;
  int64_t trainable_values = 0;
};

// Freezes every parameter whose name matches one of the comma-separated globs. ConfigError naming
// a pattern that matches no parameter (a typo would otherwise silently train everything).
FreezeCount freeze_parameters(Model& model, const std::string& patterns);

}  // namespace ddpt
