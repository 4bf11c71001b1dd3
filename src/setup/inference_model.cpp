#include "setup/inference_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "h5/h5_file.hpp"
#include "io/checkpoint.hpp"
#include "models/cpu_convolutions.hpp"
#include "run/evaluate.hpp"
#include "setup/initial_weights.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/sharding.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

void check_inputs(const H5Dataset& inputs, const DatasetInfo& info) {
  const std::vector<int64_t> sample(inputs.shape().begin() + (inputs.shape().empty() ? 0 : 1),
                                    inputs.shape().end());
  if (inputs.shape().size() < 2 || sample != info.sample_shape) {
    throw DataError(
        fmt::format("{} has shape [{}]; the model takes rows of shape [{}]", inputs.where(),
                    fmt::join(inputs.shape(), ", "), fmt::join(info.sample_shape, ", ")),
        Raised::kAllRanks);
  }
}

// ZeRO-3: `loaded`'s parameters cut into units, each rank keeping its blocks: read from `source`
// where set (published weights, each rank its own slices), else of the values the model was built
// with, or of zeros where it was built without values, until the checkpoint's are read into them.
void shard_model(const Config& config, const ShardingPlan& sharding_plan, InferenceModel& loaded,
                 Communicator& comm, ParameterValues values, ParameterSource* source) {
  const std::vector<NamedTensor> params = loaded.model->named_parameters();
  // Inference reduces nothing: a block is one buffer whatever its size.
  UnitPlan plan =
      plan_units(params, loaded.model->unit_prefixes(), std::numeric_limits<int64_t>::max());
  ShardedParameters::Options sharding;
  sharding.prefetch = sharding_plan.prefetch;
  sharding.shared_memory = config.ddp.shared_memory;
  sharding.values = values == ParameterValues::kInitialised || source != nullptr;
  sharding.source = source;
  loaded.units = std::make_unique<ShardedParameters>(params, std::move(plan), comm, sharding);
  loaded.weights =
      std::make_unique<ShardedWeights>(params, loaded.units->shard_plan(), loaded.units->shards());
  loaded.sharded = std::make_unique<ShardedModel>(*loaded.model, *loaded.units);
}

}  // namespace

InferenceModel load_inference_model(const Config& config, const std::string& checkpoint,
                                    const Job& job, Communicator* comm) {
  warn_of_cpu_convolution_problem(job);
  InferenceModel loaded;
  loaded.info = deck_data_info(config.data);
  const ShardingPlan plan = plan_sharding(config, comm ? comm->size() : 1, job.device.device);
  const bool sharded = comm && plan.parameters_sharded();
  // ZeRO-3: a built-in model is built without values, the checkpoint's read into the shards, so
  // no rank holds it whole (a TorchScript model is its file's, loaded whole).
  const ParameterValues values = sharded ? ParameterValues::kNone : ParameterValues::kInitialised;
  loaded.model = make_model(config.model, loaded.info, values);
  loaded.device = job.device.device;
  const bool gpt = config.model.type == ModelType::kGpt;
  const bool published = !is_hdf5_file(checkpoint);
  // Sharded as training shards it: the parameters reach the device a unit at a time. Published
  // weights (safetensors) are read as model.init reads them: under ZeRO-3 each rank reads its own
  // slices while the parameters are cut.
  if (sharded) {
    std::unique_ptr<InitialWeightsSource> source;
    if (published) source = open_initial_weights(checkpoint, *loaded.model, gpt);
    move_all_but_trainable(*loaded.model, loaded.device);
    shard_model(config, plan, loaded, *comm, values, source.get());
    if (source) source->log_read();
  } else if (published) {
    load_initial_weights(checkpoint, *loaded.model, gpt);
  }
  if (!published) {
    // A run that kept a moving average evaluated with it: so do eval and predict.
    loaded.step = load_model_weights(
        checkpoint, loaded.model->named_parameters(), loaded.model->named_buffers(),
        /*prefer_ema=*/config.train.ema_decay > 0, loaded.weights.get());
  }
  if (!loaded.units) loaded.model->to(loaded.device);
  loaded.model->train(false);
  return loaded;
}

torch::Tensor predict_rows(InferenceModel& loaded, const H5Dataset& inputs, int64_t first,
                           int64_t count, int64_t batch, int64_t most_rows) {
  check_inputs(inputs, loaded.info);
  torch::NoGradGuard no_grad;
  Model& model = loaded.runnable();
  std::vector<torch::Tensor> parts;
  const int64_t forwards = forwards_over(model, count, most_rows, batch);
  for (int64_t k = 0; k < forwards; ++k) {
    const int64_t start = first + k * batch;
    const int64_t n = std::min(batch, first + count - start);
    if (n <= 0) {  // in lockstep, past this rank's rows: a forward that counts for nothing
      model.forward(inputs.read_range(0, 1).to(torch::kFloat).to(loaded.device));
      continue;
    }
    const torch::Tensor x = inputs.read_range(start, n).to(torch::kFloat).to(loaded.device);
    parts.push_back(model.forward(x).to(torch::kFloat).cpu().reshape({n, -1}));
  }
  if (parts.empty()) return torch::empty({0, loaded.info.outputs}, torch::kFloat);
  return torch::cat(parts);
}

std::shared_ptr<const Dataset> evaluation_data(const Config& config, const std::string& input) {
  if (!input.empty()) return open_dataset_file(config.data, input);
  const DataSplits splits = make_datasets(config.data, config.run.seed);
  return splits.val ? splits.val : splits.train;
}

}  // namespace ddpt
