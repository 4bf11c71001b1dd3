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
  // A run that kept a moving average evaluated with it: so do eval and predict.
  loaded.step = load_model_weights(checkpoint, loaded.model->named_parameters(),
                                   loaded.model->named_buffers(),
                                   /*prefer_ema=*/config.train.ema_decay > 0);
  loaded.model->to(device);
  loaded.model->train(false);
  return loaded;
}

}  // namespace ddpt
