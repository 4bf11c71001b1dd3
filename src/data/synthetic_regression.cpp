#include "data/synthetic_regression.hpp"

#include <fmt/format.h>

namespace ddpt {

SyntheticRegression::SyntheticRegression(const TeacherSpec& spec) : spec_(spec) {
  Tables tables = teacher_regression(spec);
  inputs_ = std::move(tables.inputs);
  targets_ = std::move(tables.targets);
}

Batch SyntheticRegression::get(const torch::Tensor& indices) const {
  return {inputs_.index_select(0, indices), targets_.index_select(0, indices)};
}

std::string SyntheticRegression::describe() const {
  return fmt::format(
      "synthetic regression: {} samples x {} features -> {} targets (teacher hidden {}, 1% "
      "noise)",
      spec_.samples, spec_.features, spec_.outputs, spec_.teacher_hidden);
}

}  // namespace ddpt
