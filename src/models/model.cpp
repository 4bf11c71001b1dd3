#include "models/model.hpp"

namespace ddpt {

int64_t parameter_count(Model& model) {
  int64_t count = 0;
  for (const auto& p : model.named_parameters()) count += p.tensor.numel();
  return count;
}

}  // namespace ddpt
