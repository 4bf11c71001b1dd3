// Multi-layer perceptron: Linear -> ReLU -> ... -> Linear (logits). Inputs with more than one
// feature dimension are flattened ([N, C, H, W] -> [N, C*H*W]).
#pragma once

#include <vector>

#include "models/module_model.hpp"

namespace ddpt {

class Mlp final : public ModuleModel {
 public:
  // `checkpoint_blocks`: each hidden layer's activations (Linear, ReLU) recomputed in backward
  // (models/activation_checkpoint.hpp).
  Mlp(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs,
      bool checkpoint_blocks = false, ParameterValues values = ParameterValues::kInitialised);
  // The parameters of that MLP, without building it (a double: an absurd deck overflows int64).
  static double parameter_count(int64_t inputs, const std::vector<int64_t>& hidden,
                                int64_t outputs);
  torch::Tensor forward(const torch::Tensor& inputs) override;
  // The hidden layers ("0.", "2.", ...: each a Linear and its ReLU); the output layer is the root.
  std::vector<std::string> unit_prefixes() const override;
  void run_blocks_through(UnitRunner* runner) override { runner_ = runner; }

 private:
  torch::nn::Module& root() override { return *net_; }
  torch::nn::Sequential net_;
  bool checkpoint_blocks_;
  UnitRunner* runner_ = nullptr;  // ZeRO-3: gathers each hidden layer's parameters
};

}  // namespace ddpt
