// data.type = synthetic_images: a classification task a CNN can learn and an MLP finds harder.
// Each class has a smooth random pattern [channels, size, size]; a sample is its class's pattern,
// shifted by a few pixels (circularly), scaled in contrast, plus Gaussian noise. Generated from the
// seed alone, so it is identical on every rank and for every rank count.
#pragma once

#include "data/dataset.hpp"

namespace ddpt {

struct SyntheticImagesSpec {
  int64_t samples = 8192;
  int64_t channels = 3;
  int64_t size = 16;
  int64_t classes = 10;
  int64_t seed = 1234;
};

class SyntheticImages final : public Dataset {
 public:
  explicit SyntheticImages(const SyntheticImagesSpec& spec);
  int64_t size() const override { return images_.size(0); }
  Batch get(const torch::Tensor& indices) const override;
  DatasetInfo info() const override;
  std::string describe() const override;

 private:
  SyntheticImagesSpec spec_;
  torch::Tensor images_;  // [samples, channels, size, size] float32
  torch::Tensor labels_;  // [samples] int64
};

}  // namespace ddpt
