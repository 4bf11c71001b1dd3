// Builds the model a deck asks for.
#pragma once

#include <memory>

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "models/model.hpp"

namespace ddpt {

// `inputs`/`outputs`: the dataset's feature and class counts (used by built-in models).
std::unique_ptr<Model> make_model(const ModelConfig& config, int64_t inputs, int64_t outputs);
// The model for a dataset: built-in models are sized from its sample shape and output count.
// ConfigError if the model cannot read that kind of data.
std::unique_ptr<Model> make_model(const ModelConfig& config, const DatasetInfo& data);

}  // namespace ddpt
