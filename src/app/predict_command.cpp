// ddptrain predict DECK --checkpoint PATH --input in.h5 --output out.h5: the model's outputs for
// every row of the input, rows shared across ranks, all written into one file collectively in
// input order.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "app/command_flags.hpp"
#include "app/commands.hpp"
#include "app/inference_model.hpp"
#include "app/job.hpp"
#include "config/batch_size.hpp"
#include "config/parse_config.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "io/predictions_schema.hpp"
#include "io/staged_file.hpp"
#include "train/evaluate.hpp"
#include "util/check.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

const char* kPredictUsage =
    "ddptrain predict DECK --checkpoint PATH --input IN.h5 --output OUT.h5 [--section.key=value]";

// This rank's rows of the input and the model's outputs for them (on the CPU).
torch::Tensor predict_rows(InferenceModel& loaded, const H5Dataset& inputs, int64_t first,
                           int64_t count, int64_t batch, torch::Device device) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  for (int64_t start = first; start < first + count; start += batch) {
    const int64_t n = std::min(batch, first + count - start);
    const torch::Tensor x = inputs.read_range(start, n).to(torch::kFloat).to(device);
    parts.push_back(loaded.model->forward(x).to(torch::kFloat).cpu().reshape({n, -1}));
  }
  if (parts.empty()) return torch::empty({0, loaded.info.outputs}, torch::kFloat);
  return torch::cat(parts);
}

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

int predict_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  std::vector<std::string> rest = args;
  const std::string checkpoint = take_required_flag(rest, "checkpoint", kPredictUsage);
  const std::string input_path = take_required_flag(rest, "input", kPredictUsage);
  const std::string output_path = take_required_flag(rest, "output", kPredictUsage);
  const Config config = parse_config(rest);
  if (config.data.type == DataType::kTokens) {
    throw ConfigError("predict reads rows of an inputs array; for token data use ddptrain eval");
  }
  const Job job = set_up_job(config);
  const torch::Device device = job.device.device;
  InferenceModel loaded = load_inference_model(config, checkpoint, device);

  const H5File input = H5File::open_read(input_path);
  const H5Dataset inputs = H5Dataset::open(input, config.data.inputs);
  check_inputs(inputs, loaded.info);

  const int rank = mpi.world_rank();
  const int world = mpi.world_size();
  const auto [first, count] = share_of_rows(inputs.rows(), rank, world);
  const int64_t batch = eval_batch_size(config, world);
  const torch::Tensor outputs = predict_rows(loaded, inputs, first, count, batch, device);

  // Staged: a failed run leaves any older output untouched.
  {
    H5File file = H5File::create(staging_path(output_path).string(), job.group->comm());
    const H5Node& root = file;
    root.write_attribute(predictions_schema::kVersion, ddptrain_version());
    root.write_attribute(predictions_schema::kCheckpoint,
                         std::filesystem::weakly_canonical(checkpoint).string());
    root.write_attribute(predictions_schema::kStep, loaded.step);
    root.write_attribute(predictions_schema::kInput,
                         std::filesystem::absolute(input_path).string());
    root.write_attribute(predictions_schema::kInputDataset, config.data.inputs);
    root.write_attribute(predictions_schema::kTask, std::string(task_name(loaded.info.task)));
    root.write_attribute(predictions_schema::kWorldSize, static_cast<int64_t>(world));
    H5Dataset predictions = root.create_dataset(predictions_schema::kPredictions, torch::kFloat,
                                                {inputs.rows(), loaded.info.outputs});
    predictions.write_rows(first, outputs);
    if (loaded.info.task == Task::kClassification) {
      H5Dataset labels =
          root.create_dataset(predictions_schema::kPredictedClass, torch::kLong, {inputs.rows()});
      labels.write_rows(first, outputs.argmax(1));
    }
  }  // collective close
  // On the disk before it is published (the collective sync is also the barrier before the
  // rename): a crash afterwards cannot leave an empty file under the output's name.
  sync_and_publish(output_path, *job.group, fmt::format("predictions '{}'", output_path),
                   "an older file of that name is kept");
  spdlog::info("predict: {} rows of {} on {} rank(s) with {} (step {}) -> {}", inputs.rows(),
               inputs.where(), world, checkpoint, loaded.step, output_path);
  return 0;
}

}  // namespace ddpt
