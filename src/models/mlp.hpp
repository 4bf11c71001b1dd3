// Multi-layer perceptron: Linear -> ReLU -> ... -> Linear (logits). Inputs with more than one
// feature dimension are flattened ([N, C, H, W] -> [N, C*H*W]).
#pragma once

#include <vector>

#include "models/module_model.hpp"

namespace ddpt {

class Mlp final : public ModuleModel {
 public:
  Mlp(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs);
  // The parameters of that MLP, without building it (a double: an absurd deck overflows int64).
  static double parameter_count(int64_t inputs, const std::vector<int64_t>& hidden,
                                int64_t outputs);
  torch::Tensor forward(const torch::Tensor& inputs) override {
    return net_->forward(inputs.dim() > 2 ? inputs.flatten(1) : inputs);
  }

 private:
  torch::nn::Module& root() override { return *net_; }
  torch::nn::Sequential net_;
};

}  // namespace ddpt
