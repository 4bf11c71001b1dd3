#include "train/optimizer.hpp"

#include "train/fused_adamw.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Parameters with at least two dimensions (weight matrices, embeddings, convolution kernels) are
// decayed; vectors (biases, LayerNorm/BatchNorm weights) are not.
bool decayed(const torch::Tensor& param) {
  return param.dim() >= 2;
}

template <class Options>
std::vector<torch::optim::OptimizerParamGroup> groups(const std::vector<NamedTensor>& params,
                                                      const Options& options) {
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> no_decay;
  for (const auto& p : params) (decayed(p.tensor) ? decay : no_decay).push_back(p.tensor);
  auto without_decay = std::make_unique<Options>(options);
  without_decay->weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> out;
  if (!decay.empty()) out.emplace_back(decay, std::make_unique<Options>(options));
  if (!no_decay.empty()) out.emplace_back(no_decay, std::move(without_decay));
  return out;
}

// Each group's weight decay, set after construction: LibTorch 2.10 and later replace a group
// option equal to the Options default (weight_decay 0) by the optimizer's default, the deck's
// weight decay, when the group is added; set here, the no-decay group keeps 0 on every version.
template <class Options>
void set_group_weight_decay(torch::optim::Optimizer& optimizer, double weight_decay) {
  for (auto& group : optimizer.param_groups()) {
    auto& options = static_cast<Options&>(group.options());
    options.weight_decay(decayed(group.params().front()) ? weight_decay : 0.0);
  }
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const std::vector<NamedTensor>& params) {
  if (config.type == OptimizerType::kSgd) {
    const auto options = torch::optim::SGDOptions(config.lr)
                             .momentum(config.momentum)
                             .nesterov(config.nesterov)
                             .weight_decay(config.weight_decay);
    if (config.nesterov && config.momentum <= 0) {
      throw ConfigError("option 'optim.nesterov' needs optim.momentum > 0");
    }
    auto sgd = std::make_unique<torch::optim::SGD>(groups(params, options), options);
    set_group_weight_decay<torch::optim::SGDOptions>(*sgd, config.weight_decay);
    return sgd;
  }
  const auto options = torch::optim::AdamWOptions(config.lr)
                           .betas({config.beta1, config.beta2})
                           .eps(config.eps)
                           .weight_decay(config.weight_decay);
  // LibTorch's AdamW arithmetic in one pass per parameter on CPU float32 (train/fused_adamw.hpp);
  // anything else goes through LibTorch's own step.
  auto adamw = std::make_unique<FusedAdamW>(groups(params, options), options);
  set_group_weight_decay<torch::optim::AdamWOptions>(*adamw, config.weight_decay);
  return adamw;
}

int64_t planned_optimizer_state_bytes(const OptimConfig& config, int64_t trainable_values) {
  const int64_t tensors_per_value =
      config.type == OptimizerType::kAdamW ? 2 : (config.momentum > 0 ? 1 : 0);
  return tensors_per_value * trainable_values * static_cast<int64_t>(sizeof(float));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace ddpt
