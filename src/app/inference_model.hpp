// The trained model of a checkpoint, rebuilt from the deck that trained it: what `predict` and
// `eval` run.
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "models/model.hpp"

namespace ddpt {

struct InferenceModel {
  std::unique_ptr<Model> model;  // on the requested device, in eval mode
  DatasetInfo info;              // of the deck's training data: the model's inputs and outputs
  int64_t step = 0;              // the checkpoint's step
};

// Every rank: builds the deck's model and loads the weights of `checkpoint` (DataError naming the
// file if it is damaged or belongs to another model).
InferenceModel load_inference_model(const Config& config, const std::string& checkpoint,
                                    torch::Device device);

}  // namespace ddpt
