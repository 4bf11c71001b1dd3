#include "models/mlp.hpp"

#include <fmt/format.h>

#include "models/activation_checkpoint.hpp"
#include "models/linear.hpp"

namespace ddpt {

Mlp::Mlp(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs,
         bool checkpoint_blocks, ParameterValues values)
    : checkpoint_blocks_(checkpoint_blocks) {
  const UnitValues units(values, deferred_);
  const auto add_layer = [&](int64_t in, int64_t out) {
    torch::Tensor state = units.before();
    net_->push_back(Linear(in, out));
    units.built(*net_->ptr(net_->size() - 1), std::move(state));
  };
  int64_t width = inputs;
  for (const int64_t h : hidden) {
    add_layer(width, h);
    net_->push_back(torch::nn::ReLU());
    flops_ += 2.0 * static_cast<double>(width * h);
    width = h;
  }
  add_layer(width, outputs);
  flops_ += 2.0 * static_cast<double>(width * outputs);
  description_ = fmt::format("MLP {} -> [{}] -> {}", inputs, fmt::join(hidden, ", "), outputs);
}

torch::Tensor Mlp::forward(const torch::Tensor& inputs) {
  torch::Tensor x = inputs.dim() > 2 ? inputs.flatten(1) : inputs;
  if (!checkpoint_blocks_ && !runner_) return net_->forward(x);
  // Hidden layers are (Linear, ReLU) pairs; the output layer runs plainly.
  const size_t layers = net_->size();
  for (size_t i = 0; i + 1 < layers; i += 2) {
    auto linear = net_->ptr(i);
    auto relu = net_->ptr(i + 1);
    auto run = [linear, relu](const torch::Tensor& in) {
      return relu->as<torch::nn::ReLUImpl>()->forward(linear->as<LinearImpl>()->forward(in));
    };
    auto kept = [this, run](const torch::Tensor& in) {
      return checkpoint_blocks_ ? checkpointed(run, in) : run(in);
    };
    x = run_unit(runner_, i / 2, kept, x);
  }
  return net_->ptr(layers - 1)->as<LinearImpl>()->forward(x);
}

std::vector<std::string> Mlp::unit_prefixes() const {
  std::vector<std::string> prefixes;
  for (size_t i = 0; i + 1 < net_->size(); i += 2) prefixes.push_back(std::to_string(i) + ".");
  return prefixes;
}

double Mlp::parameter_count(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs) {
  double count = 0;
  double width = static_cast<double>(inputs);
  for (const int64_t h : hidden) {
    count += (width + 1) * static_cast<double>(h);  // weight and bias
    width = static_cast<double>(h);
  }
  return count + (width + 1) * static_cast<double>(outputs);
}

}  // namespace ddpt
