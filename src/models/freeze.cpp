#include "models/freeze.hpp"

#include <fnmatch.h>

#include <sstream>

#include "util/error.hpp"

namespace ddpt {

FreezeCount freeze_parameters(Model& model, const std::string& patterns) {
  std::vector<std::string> globs;
  std::stringstream stream(patterns);
  for (std::string glob; std::getline(stream, glob, ',');) {
    glob.erase(0, glob.find_first_not_of(' '));
    glob.erase(glob.find_last_not_of(' ') + 1);
    if (!glob.empty()) globs.push_back(glob);
  }
  std::vector<bool> used(globs.size(), false);
  FreezeCount count;
  for (auto& p : model.named_parameters()) {
    bool frozen = false;
    for (size_t g = 0; g < globs.size(); ++g) {
      if (fnmatch(globs[g].c_str(), p.name.c_str(), 0) == 0) {
        frozen = true;
        used[g] = true;
      }
    }
    if (frozen) {
      p.tensor.requires_grad_(false);
      ++count.frozen_tensors;
      count.frozen_values += p.tensor.numel();
    } else if (p.tensor.requires_grad()) {
      count.trainable_values += p.tensor.numel();
    }
  }
  for (size_t g = 0; g < globs.size(); ++g) {
    if (!used[g]) {
      throw ConfigError("option 'model.freeze': pattern '" + globs[g] +
                        "' matches no parameter (names look like '" +
                        (model.named_parameters().empty() ? std::string("?")
                                                          : model.named_parameters().front().name) +
                        "')");
    }
  }
  return count;
}

}  // namespace ddpt
