// The trained model of a checkpoint, rebuilt from the deck that trained it, and the data it is
// evaluated on: what `predict` and `eval` run. The model is built by the same make_model, from the
// same deck, as the training run that wrote the checkpoint. With ddp.zero = 3 on more than one
// rank each rank keeps its shard of the parameters, read from the checkpoint, and each block's
// are gathered while it runs (ddp/sharded_parameters.hpp), as in training.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "data/dataset.hpp"
#include "ddp/sharded_model.hpp"
#include "ddp/sharded_parameters.hpp"
#include "h5/h5_dataset.hpp"
#include "models/model.hpp"
#include "optim/sharded_weights.hpp"
#include "runtime/job.hpp"

namespace ddpt {

struct InferenceModel {
  std::unique_ptr<Model> model;  // on `device`, in eval mode
  // ZeRO-3: the model's parameters sharded, the model that runs through them, and the part that
  // read each rank's slices; null otherwise.
  std::unique_ptr<ShardedParameters> units;
  std::unique_ptr<ShardedModel> sharded;
  std::unique_ptr<ShardedWeights> weights;
  torch::Device device = torch::kCPU;
  DatasetInfo info;  // of the deck's training data: the model's inputs and outputs
  int64_t step = 0;  // the checkpoint's step
  // The model as forward runs it (ZeRO-3: collectively, every rank every forward).
  Model& runnable() { return sharded ? *sharded : *model; }
};

// Every rank: builds the deck's model on the job's device and loads the weights of `checkpoint`
// (DataError naming the file if it is damaged or belongs to another model): a ddptrain checkpoint,
// or published weights in safetensors (a file, or a directory holding model.safetensors; step 0),
// read as model.init reads them (setup/initial_weights.hpp; under ZeRO-3 each rank its slices).
// Collective over `comm` with ddp.zero = 3 on more than one rank, which then shards the model over
// it; `comm` may be null otherwise.
InferenceModel load_inference_model(const Config& config, const std::string& checkpoint,
                                    const Job& job, Communicator* comm);

// The model's outputs (float, on the CPU, [count, outputs]) for rows [first, first + count) of
// `inputs`, in batches of `batch` rows; DataError (every rank) if the rows are not of the model's
// sample shape. Collective under ZeRO-3, where every rank runs as many forwards as the rank with
// the most rows (`most_rows`) needs.
torch::Tensor predict_rows(InferenceModel& loaded, const H5Dataset& inputs, int64_t first,
                           int64_t count, int64_t batch, int64_t most_rows);

// What `eval` evaluates on: the file `input` read with the deck's dataset names, or, without one,
// the deck's validation split, else its training data.
std::shared_ptr<const Dataset> evaluation_data(const Config& config, const std::string& input);

}  // namespace ddpt
