// Multi-layer perceptron: Linear -> ReLU -> ... -> Linear (logits). Inputs with more than one
// feature dimension are flattened ([N, C, H, W] -> [N, C*H*W]).
#pragma once

#include <vector>

#include "models/model.hpp"

namespace ddpt {

class Mlp final : public Model {
 public:
  Mlp(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs);
  torch::Tensor forward(const torch::Tensor& inputs) override {
    return net_->forward(inputs.dim() > 2 ? inputs.flatten(1) : inputs);
  }
  std::vector<NamedTensor> named_parameters() override;
  std::vector<NamedTensor> named_buffers() override;
  void train(bool on) override { net_->train(on); }
  void to(torch::Device device) override { net_->to(device); }
  std::string describe() const override { return description_; }

 private:
  torch::nn::Sequential net_;
  std::string description_;
};

}  // namespace ddpt
