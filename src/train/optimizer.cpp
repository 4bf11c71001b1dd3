#include "train/optimizer.hpp"

#include "util/error.hpp"

namespace ddpt {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        std::vector<torch::Tensor> params) {
  if (config.type == "sgd") {
    return std::make_unique<torch::optim::SGD>(std::move(params),
                                               torch::optim::SGDOptions(config.lr)
                                                   .momentum(config.momentum)
                                                   .weight_decay(config.weight_decay));
  }
  if (config.type == "adamw") {
    return std::make_unique<torch::optim::AdamW>(std::move(params),
                                                 torch::optim::AdamWOptions(config.lr)
                                                     .betas({config.beta1, config.beta2})
                                                     .eps(config.eps)
                                                     .weight_decay(config.weight_decay));
  }
  throw ConfigError("option 'optim.type' = " + config.type + ": unknown optimizer");
}

}  // namespace ddpt
