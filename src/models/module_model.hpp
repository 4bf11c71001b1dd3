// The built-in models: a torch::nn::Module tree whose names are the state-dict names, wrapped in
// the Model interface.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/deferred_values.hpp"
#include "models/model.hpp"

namespace ddpt {

template <class Dict>
std::vector<NamedTensor> to_named(const Dict& dict) {
  std::vector<NamedTensor> out;
  for (const auto& item : dict) out.push_back({item.key(), item.value()});
  return out;
}

class ModuleModel : public Model {
 public:
  std::vector<NamedTensor> named_parameters() override {
    return to_named(root().named_parameters());
  }
  std::vector<NamedTensor> named_buffers() override { return to_named(root().named_buffers()); }
  void train(bool on) override { root().train(on); }
  void to(torch::Device device) override { root().to(device); }
  std::string describe() const override { return description_; }
  double forward_flops_per_sample() const override { return flops_; }
  void materialize(const std::vector<NamedTensor>& params) override {
    std::vector<torch::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    deferred_.materialize(tensors);
  }

 protected:
  virtual torch::nn::Module& root() = 0;
  std::string description_;
  double flops_ = 0;         // multiply-adds x 2 of one sample's forward pass
  DeferredValues deferred_;  // ParameterValues::kDeferred: how to draw the initial values
};

}  // namespace ddpt
