#include "train/ema.hpp"

#include <torch/torch.h>

namespace ddpt {

Ema::Ema(const std::vector<NamedTensor>& params, double decay) : params_(params), decay_(decay) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params_) averages_.push_back({p.name, p.tensor.detach().clone()});
}

void Ema::update(const torch::Tensor& skipped) {
  torch::NoGradGuard no_grad;
  if (skipped.defined()) {
    // The weight as a tensor, 0 for a skipped step: decided without reading the flag back.
    const torch::Tensor weight = (1 - skipped) * (1.0 - decay_);
    for (size_t i = 0; i < params_.size(); ++i) {
      averages_[i].tensor.lerp_(params_[i].tensor.detach(), weight);
    }
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    // average += (1 - decay) x (param - average), i.e. decay x average + (1 - decay) x param
    averages_[i].tensor.lerp_(params_[i].tensor.detach(), 1.0 - decay_);
  }
}

void Ema::swap() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor live = params_[i].tensor.detach().clone();
    params_[i].tensor.detach().copy_(averages_[i].tensor);
    averages_[i].tensor.copy_(live);
  }
}

void Ema::save(StateWriter& root) const {
  const auto group = root.group("ema");
  for (const auto& a : averages_) group->tensor(a.name, a.tensor);
}

void Ema::load(const StateReader& root) {
  torch::NoGradGuard no_grad;
  const auto group = root.group(root.has("ema") ? "ema" : "model");
  for (const auto& a : averages_) {
    a.tensor.copy_(stored_as(group->tensor(a.name), a.tensor, a.name));
  }
}

}  // namespace ddpt
