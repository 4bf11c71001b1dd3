// The trained model of a checkpoint, rebuilt from the deck that trained it, and the data it is
// evaluated on: what `predict` and `eval` run. The model is built by the same make_model, from the
// same deck, as the training run that wrote the checkpoint.
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "h5/h5_dataset.hpp"
#include "models/model.hpp"
#include "runtime/job.hpp"

namespace ddpt {

struct InferenceModel {
  std::unique_ptr<Model> model;  // on `device`, in eval mode
  torch::Device device = torch::kCPU;
  DatasetInfo info;  // of the deck's training data: the model's inputs and outputs
  int64_t step = 0;  // the checkpoint's step
};

// Every rank: builds the deck's model on the job's device and loads the weights of `checkpoint`
// (DataError naming the file if it is damaged or belongs to another model).
InferenceModel load_inference_model(const Config& config, const std::string& checkpoint,
                                    const Job& job);

// The model's outputs (float, on the CPU, [count, outputs]) for rows [first, first + count) of
// `inputs`, in batches of `batch` rows; DataError (every rank) if the rows are not of the model's
// sample shape.
torch::Tensor predict_rows(InferenceModel& loaded, const H5Dataset& inputs, int64_t first,
                           int64_t count, int64_t batch);

// What `eval` evaluates on: the file `input` read with the deck's dataset names, or, without one,
// the deck's validation split, else its training data.
std::shared_ptr<const Dataset> evaluation_data(const Config& config, const std::string& input);

}  // namespace ddpt
