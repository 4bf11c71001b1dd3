#include "models/mlp.hpp"

#include <fmt/format.h>

namespace ddpt {
namespace {

template <class Dict>
std::vector<NamedTensor> to_named(const Dict& dict) {
  std::vector<NamedTensor> out;
  for (const auto& item : dict) out.push_back({item.key(), item.value()});
  return out;
}

}  // namespace

Mlp::Mlp(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs) {
  int64_t width = inputs;
  for (const int64_t h : hidden) {
    net_->push_back(torch::nn::Linear(width, h));
    net_->push_back(torch::nn::ReLU());
    width = h;
  }
  net_->push_back(torch::nn::Linear(width, outputs));
  description_ = fmt::format("MLP {} -> [{}] -> {}", inputs, fmt::join(hidden, ", "), outputs);
}

std::vector<NamedTensor> Mlp::named_parameters() {
  return to_named(net_->named_parameters());
}
std::vector<NamedTensor> Mlp::named_buffers() {
  return to_named(net_->named_buffers());
}

int64_t parameter_count(Model& model) {
  int64_t count = 0;
  for (const auto& p : model.named_parameters()) count += p.tensor.numel();
  return count;
}

}  // namespace ddpt
