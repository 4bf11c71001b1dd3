#include "models/make_model.hpp"

#include "models/mlp.hpp"
#include "models/torchscript_model.hpp"
#include "util/error.hpp"

namespace ddpt {

std::unique_ptr<Model> make_model(const ModelConfig& config, int64_t inputs, int64_t outputs) {
  if (config.type == "mlp") {
    return std::make_unique<Mlp>(inputs, parse_int_list("model.hidden", config.hidden), outputs);
  }
  if (config.type == "torchscript") return std::make_unique<TorchScriptModel>(config.path);
  throw ConfigError("option 'model.type' = " + config.type + ": unknown model type");
}

std::unique_ptr<Model> make_model(const ModelConfig& config, const DatasetInfo& data) {
  if (config.type == "mlp" && data.task == Task::kNextToken) {
    throw ConfigError(
        "option 'model.type' = mlp cannot read token windows (data.type = tokens); use a "
        "TorchScript language model (model.type = torchscript)");
  }
  int64_t features = 1;
  for (const int64_t d : data.sample_shape) features *= d;
  return make_model(config, features, data.outputs);
}

}  // namespace ddpt
