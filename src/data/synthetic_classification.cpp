#include "data/synthetic_classification.hpp"

#include <fmt/format.h>

#include "data/synthetic_tables.hpp"

namespace ddpt {

SyntheticClassification::SyntheticClassification(const SyntheticClassificationSpec& spec)
    : spec_(spec) {
  Tables tables = teacher_classification(
      {spec.samples, spec.features, spec.classes, spec.teacher_hidden, spec.seed});
  inputs_ = std::move(tables.inputs);
  targets_ = std::move(tables.targets);
}

Batch SyntheticClassification::get(const torch::Tensor& indices) const {
  return {inputs_.index_select(0, indices), targets_.index_select(0, indices)};
}

DatasetInfo SyntheticClassification::info() const {
  return {Task::kClassification, {spec_.features}, spec_.classes};
}

std::string SyntheticClassification::describe() const {
  return fmt::format(
      "synthetic classification: {} samples x {} features, {} classes (teacher "
      "hidden {})",
      spec_.samples, spec_.features, spec_.classes, spec_.teacher_hidden);
}

}  // namespace ddpt
