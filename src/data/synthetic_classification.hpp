// data.type = synthetic: teacher_classification() tables held in memory (synthetic_tables.hpp).
#pragma once

#include "data/dataset.hpp"

namespace ddpt {

struct SyntheticClassificationSpec {
  int64_t samples = 16384;
  int64_t features = 256;
  int64_t classes = 10;
  int64_t teacher_hidden = 64;
  int64_t seed = 1234;
};

class SyntheticClassification final : public Dataset {
 public:
  explicit SyntheticClassification(const SyntheticClassificationSpec& spec);
  int64_t size() const override { return inputs_.size(0); }
  Batch get(const torch::Tensor& indices) const override;
  DatasetInfo info() const override;
  std::string describe() const override;

 private:
  SyntheticClassificationSpec spec_;
  torch::Tensor inputs_;   // [samples, features] float32
  torch::Tensor targets_;  // [samples] int64
};

}  // namespace ddpt
