// Builds the model a deck asks for.
#pragma once

#include <memory>

#include "config/config.hpp"
#include "models/model.hpp"

namespace ddpt {

// `inputs`/`outputs`: the dataset's feature and class counts (used by built-in models).
std::unique_ptr<Model> make_model(const ModelConfig& config, int64_t inputs, int64_t outputs);

}  // namespace ddpt
