#include "models/freeze.hpp"

#include "util/error.hpp"
#include "util/glob_list.hpp"

namespace ddpt {

FreezeCount freeze_parameters(Model& model, const std::string& patterns) {
  GlobList globs(patterns);
  FreezeCount count;
  for (auto& p : model.named_parameters()) {
    if (globs.matches(p.name)) {
      p.tensor.requires_grad_(false);
      ++count.frozen_tensors;
      count.frozen_values += p.tensor.numel();
    } else if (p.tensor.requires_grad()) {
      count.trainable_values += p.tensor.numel();
    }
  }
  for (const std::string& glob : globs.unused()) {
    throw ConfigError("option 'model.freeze': pattern '" + glob +
                      "' matches no parameter (names look like '" +
                      (model.named_parameters().empty() ? std::string("?")
                                                        : model.named_parameters().front().name) +
                      "')");
  }
  return count;
}

}  // namespace ddpt
