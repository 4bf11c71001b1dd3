// data.type = synthetic_regression: teacher_regression() tables held in memory
// (synthetic_tables.hpp): data.outputs float targets per sample, learned with MSE.
#pragma once

#include "data/dataset.hpp"
#include "data/synthetic_tables.hpp"

namespace ddpt {

class SyntheticRegression final : public Dataset {
 public:
  explicit SyntheticRegression(const TeacherSpec& spec);
  int64_t size() const override { return inputs_.size(0); }
  Batch get(const torch::Tensor& indices) const override;
  DatasetInfo info() const override { return {Task::kRegression, {spec_.features}, spec_.outputs}; }
  std::string describe() const override;

 private:
  TeacherSpec spec_;
  torch::Tensor inputs_;   // [samples, features] float32
  torch::Tensor targets_;  // [samples, outputs] float32
};

}  // namespace ddpt
