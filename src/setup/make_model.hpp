// Builds the model a deck asks for.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "config/sections.hpp"
#include "data/dataset.hpp"
#include "models/model.hpp"

namespace ddpt {

// `inputs`/`outputs`: the dataset's feature and class counts (used by built-in models).
// `values`: whether a built-in model's parameters get their initial values or no memory at all
// (models/model.hpp); a TorchScript model always has its file's.
std::unique_ptr<Model> make_model(const ModelConfig& config, int64_t inputs, int64_t outputs,
                                  ParameterValues values = ParameterValues::kInitialised);
// The model for a dataset: built-in models are sized from its sample shape and output count.
// ConfigError if the model cannot read that kind of data.
std::unique_ptr<Model> make_model(const ModelConfig& config, const DatasetInfo& data,
                                  ParameterValues values = ParameterValues::kInitialised);

// The size of the model make_model(config, data) builds, found without building it, so that a
// deck asking for an absurd size is refused before anything is allocated.
struct PlannedModelSize {
  double parameters = 0;  // a double: an absurd deck overflows int64
  // The options that size it, with their values ("model.hidden = 4096,4096 (for 256 input
  // features)"), for messages.
  std::string options;
};
// nullopt for a TorchScript model (its size is the file's).
std::optional<PlannedModelSize> planned_model_size(const ModelConfig& config,
                                                   const DatasetInfo& data);

}  // namespace ddpt
