#include "setup/inference_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/make_datasets.hpp"
#include "io/checkpoint.hpp"
#include "models/cpu_convolutions.hpp"
#include "models/make_model.hpp"
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

}  // namespace

InferenceModel load_inference_model(const Config& config, const std::string& checkpoint,
                                    const Job& job) {
  warn_of_cpu_convolution_problem(job);
  InferenceModel loaded;
  loaded.info = deck_data_info(config.data);
  loaded.model = make_model(config.model, loaded.info);
  // A run that kept a moving average evaluated with it: so do eval and predict.
  loaded.step = load_model_weights(checkpoint, loaded.model->named_parameters(),
                                   loaded.model->named_buffers(),
                                   /*prefer_ema=*/config.train.ema_decay > 0);
  loaded.device = job.device.device;
  loaded.model->to(loaded.device);
  loaded.model->train(false);
  return loaded;
}

torch::Tensor predict_rows(InferenceModel& loaded, const H5Dataset& inputs, int64_t first,
                           int64_t count, int64_t batch) {
  check_inputs(inputs, loaded.info);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  for (int64_t start = first; start < first + count; start += batch) {
    const int64_t n = std::min(batch, first + count - start);
    const torch::Tensor x = inputs.read_range(start, n).to(torch::kFloat).to(loaded.device);
    parts.push_back(loaded.model->forward(x).to(torch::kFloat).cpu().reshape({n, -1}));
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
