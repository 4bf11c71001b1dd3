#include "app/inference_model.hpp"

#include "data/make_datasets.hpp"
#include "io/checkpoint.hpp"
#include "models/make_model.hpp"

namespace ddpt {

InferenceModel load_inference_model(const Config& config, const std::string& checkpoint,
                                    torch::Device device) {
  InferenceModel loaded;
  loaded.info = deck_data_info(config.data);
  loaded.model = make_model(config.model, loaded.info);
  // The checkpoint holds the parameters that were trained (those that require gradients).
  std::vector<NamedTensor> trainable;
  for (const auto& p : loaded.model->named_parameters()) {
    if (p.tensor.requires_grad()) trainable.push_back(p);
  }
  loaded.step = load_model_weights(checkpoint, trainable, loaded.model->named_buffers());
  loaded.model->to(device);
  loaded.model->train(false);
  return loaded;
}

}  // namespace ddpt
