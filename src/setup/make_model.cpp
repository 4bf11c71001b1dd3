#include "setup/make_model.hpp"

#include <fmt/format.h>

#include "config/int_list.hpp"
#include "models/cnn.hpp"
#include "models/gpt.hpp"
#include "models/mlp.hpp"
#include "models/torchscript_model.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

GptSpec gpt_spec(const ModelConfig& config, const DatasetInfo& data) {
  if (data.task != Task::kNextToken) {
    throw ConfigError(
        "option 'model.type' = gpt needs token windows (data.type = tokens or "
        "synthetic_tokens)");
  }
  GptSpec spec;
  spec.window = data.sample_shape.front();
  spec.block = config.block > 0 ? config.block : spec.window;
  spec.vocab = config.vocab > 0 ? config.vocab : data.outputs;
  spec.n_layer = config.n_layer;
  spec.n_head = config.n_head;
  spec.n_embd = config.n_embd;
  spec.dropout = config.dropout;
  spec.tie = config.tie;
  spec.checkpoint_blocks = config.activation_checkpointing;
  if (spec.block < spec.window) {
    throw ConfigError(
        fmt::format("option 'model.block' = {} is shorter than the data's windows "
                    "(data.block = {})",
                    spec.block, spec.window));
  }
  if (spec.vocab < data.outputs) {
    throw ConfigError(
        fmt::format("option 'model.vocab' = {} is smaller than the data's vocabulary ({})",
                    spec.vocab, data.outputs));
  }
  return spec;
}

// The built-in model make_model builds for `data`: which one, and how it is sized.
bool builds_cnn(const ModelConfig& config, const DatasetInfo& data) {
  if (data.task == Task::kNextToken && config.type != ModelType::kTorchScript) {
    throw ConfigError(std::string("option 'model.type' = ") + choice_name(config.type) +
                      " cannot read token windows (data.type = tokens); use model.type = gpt or "
                      "a TorchScript language model");
  }
  return config.type == ModelType::kCnn;
}

int64_t features_of(const DatasetInfo& data) {
  int64_t features = 1;
  for (const int64_t d : data.sample_shape) features *= d;
  return features;
}

}  // namespace

std::unique_ptr<Model> make_model(const ModelConfig& config, int64_t inputs, int64_t outputs,
                                  ParameterValues values) {
  if (config.type == ModelType::kMlp) {
    return std::make_unique<Mlp>(inputs, parse_int_list("model.hidden", config.hidden), outputs,
                                 config.activation_checkpointing, values);
  }
  if (config.type == ModelType::kTorchScript) {
    if (config.activation_checkpointing) {
      throw ConfigError(
          "option 'model.activation_checkpointing' = true: the built-in models (mlp, cnn, gpt) "
          "only; a TorchScript model's blocks are not known");
    }
    return std::make_unique<TorchScriptModel>(config.path);
  }
  throw ConfigError(std::string("option 'model.type' = ") + choice_name(config.type) +
                    ": is built from the data's sample shape, not a feature count");
}

std::unique_ptr<Model> make_model(const ModelConfig& config, const DatasetInfo& data,
                                  ParameterValues values) {
  if (config.type == ModelType::kGpt) {
    GptSpec spec = gpt_spec(config, data);
    spec.values = values;
    return std::make_unique<Gpt>(spec);
  }
  if (builds_cnn(config, data)) {
    return std::make_unique<Cnn>(data.sample_shape,
                                 parse_int_list("model.channels", config.channels), config.blocks,
                                 data.outputs, config.activation_checkpointing, values);
  }
  return make_model(config, features_of(data), data.outputs, values);
}

namespace {

std::optional<double> planned_parameters(const ModelConfig& config, const DatasetInfo& data) {
  if (config.type == ModelType::kGpt) return Gpt::parameter_count(gpt_spec(config, data));
  if (builds_cnn(config, data)) {
    return Cnn::parameter_count(data.sample_shape,
                                parse_int_list("model.channels", config.channels), config.blocks,
                                data.outputs);
  }
  if (config.type == ModelType::kMlp) {
    return Mlp::parameter_count(features_of(data), parse_int_list("model.hidden", config.hidden),
                                data.outputs);
  }
  return std::nullopt;  // TorchScript: the file's parameters, as large as the file
}

std::string planned_size_options(const ModelConfig& config, const DatasetInfo& data) {
  switch (config.type) {
    case ModelType::kMlp:
      return fmt::format("model.hidden = {} (for {} input features and {} outputs)", config.hidden,
                         features_of(data), data.outputs);
    case ModelType::kCnn:
      return fmt::format("model.channels = {}, model.blocks = {}", config.channels, config.blocks);
    case ModelType::kGpt: {
      const GptSpec spec = gpt_spec(config, data);
      return fmt::format(
          "model.n_layer = {}, model.n_embd = {}, model.vocab = {}, model.block = {}", spec.n_layer,
          spec.n_embd, spec.vocab, spec.block);
    }
    case ModelType::kTorchScript:
      return "model.path = " + config.path;
  }
  return {};
}

}  // namespace

std::optional<PlannedModelSize> planned_model_size(const ModelConfig& config,
                                                   const DatasetInfo& data) {
  const std::optional<double> parameters = planned_parameters(config, data);
  if (!parameters) return std::nullopt;
  return PlannedModelSize{*parameters, planned_size_options(config, data)};
}

}  // namespace ddpt
