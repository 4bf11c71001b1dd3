#include "data/synthetic_classification.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

namespace ddpt {

SyntheticClassificationSpec synthetic_spec_of(const DataConfig& data, int64_t seed) {
  SyntheticClassificationSpec spec;
  spec.samples = data.samples;
  spec.features = data.features;
  spec.classes = data.classes;
  spec.teacher_hidden = data.teacher_hidden;
  spec.seed = seed;
  return spec;
}

SyntheticClassification::SyntheticClassification(const SyntheticClassificationSpec& spec)
    : spec_(spec) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(spec.seed));
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  inputs_ = at::randn({spec.samples, spec.features}, gen, f32);
  // Teacher weights scaled by 1/sqrt(fan_in) so its logits are O(1) and every class occurs.
  const torch::Tensor w1 =
      at::randn({spec.features, spec.teacher_hidden}, gen, f32) / std::sqrt(double(spec.features));
  const torch::Tensor w2 = at::randn({spec.teacher_hidden, spec.classes}, gen, f32) /
                           std::sqrt(double(spec.teacher_hidden));
  targets_ = torch::tanh(inputs_.matmul(w1)).matmul(w2).argmax(1);
}

Batch SyntheticClassification::get(const torch::Tensor& indices) const {
  return {inputs_.index_select(0, indices), targets_.index_select(0, indices)};
}

std::string SyntheticClassification::describe() const {
  return fmt::format(
      "synthetic classification: {} samples x {} features, {} classes (teacher "
      "hidden {})",
      spec_.samples, spec_.features, spec_.classes, spec_.teacher_hidden);
}

}  // namespace ddpt
