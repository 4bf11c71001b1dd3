#include "optim/optimizer.hpp"

#include "optim/fused_adamw.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

struct Groups {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<bool> decayed;  // by group
};

template <class Options>
Groups groups(const std::vector<torch::Tensor>& tensors, const std::vector<bool>& decayed,
              const Options& options) {
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> no_decay;
  for (size_t i = 0; i < tensors.size(); ++i) (decayed[i] ? decay : no_decay).push_back(tensors[i]);
  auto without_decay = std::make_unique<Options>(options);
  without_decay->weight_decay(0.0);
  Groups out;
  if (!decay.empty()) {
    out.groups.emplace_back(decay, std::make_unique<Options>(options));
    out.decayed.push_back(true);
  }
  if (!no_decay.empty()) {
    out.groups.emplace_back(no_decay, std::move(without_decay));
    out.decayed.push_back(false);
  }
  return out;
}

// Each group's weight decay, set after construction: LibTorch 2.10 and later replace a group
// option equal to the Options default (weight_decay 0) by the optimizer's default, the deck's
// weight decay, when the group is added; set here, the no-decay group keeps 0 on every version.
template <class Options>
void set_group_weight_decay(torch::optim::Optimizer& optimizer, const std::vector<bool>& decayed,
                            double weight_decay) {
  auto& param_groups = optimizer.param_groups();
  for (size_t g = 0; g < param_groups.size(); ++g) {
    static_cast<Options&>(param_groups[g].options()).weight_decay(decayed[g] ? weight_decay : 0.0);
  }
}

}  // namespace

bool is_decayed(const torch::Tensor& param) {
  return param.dim() >= 2;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& config,
                                                        const std::vector<NamedTensor>& params) {
  std::vector<torch::Tensor> tensors;
  std::vector<bool> decayed;
  for (const auto& p : params) {
    tensors.push_back(p.tensor);
    decayed.push_back(is_decayed(p.tensor));
  }
  return make_optimizer(config, tensors, decayed);
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& config,
                                                        const std::vector<torch::Tensor>& tensors,
                                                        const std::vector<bool>& decayed) {
  if (config.type == OptimizerType::kSgd) {
    const auto options = torch::optim::SGDOptions(config.lr)
                             .momentum(config.momentum)
                             .nesterov(config.nesterov)
                             .weight_decay(config.weight_decay);
    if (config.nesterov && config.momentum <= 0) {
      throw ConfigError("option 'optim.nesterov' needs optim.momentum > 0");
    }
    auto grouped = groups(tensors, decayed, options);
    auto sgd = std::make_unique<torch::optim::SGD>(std::move(grouped.groups), options);
    set_group_weight_decay<torch::optim::SGDOptions>(*sgd, grouped.decayed, config.weight_decay);
    return sgd;
  }
  const auto options = torch::optim::AdamWOptions(config.lr)
                           .betas({config.beta1, config.beta2})
                           .eps(config.eps)
                           .weight_decay(config.weight_decay);
  // LibTorch's AdamW arithmetic in one pass per parameter on CPU float32 (optim/fused_adamw.hpp);
  // anything else goes through LibTorch's own step.
  auto grouped = groups(tensors, decayed, options);
  auto adamw = std::make_unique<FusedAdamW>(std::move(grouped.groups), options);
  set_group_weight_decay<torch::optim::AdamWOptions>(*adamw, grouped.decayed, config.weight_decay);
  return adamw;
}

int64_t planned_optimizer_state_bytes(const OptimizerSpec& config, int64_t trainable_values) {
  const int64_t tensors_per_value =
      config.type == OptimizerType::kAdamW ? 2 : (config.momentum > 0 ? 1 : 0);
  return tensors_per_value * trainable_values * static_cast<int64_t>(sizeof(float));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace ddpt
