#include "data/synthetic_images.hpp"

#include <fmt/format.h>

#include "data/synthetic_tables.hpp"

namespace ddpt {
namespace {

constexpr int64_t kPatternGrid = 4;      // patterns are bilinear upsamplings of a 4 x 4 random grid
constexpr int64_t kMaxShift = 2;         // pixels, in each direction
constexpr double kNoise = 1.5;           // standard deviation of the added noise
constexpr double kContrastSpread = 0.3;  // contrast is uniform in [1 - spread, 1 + spread]

}  // namespace

SyntheticImages::SyntheticImages(const SyntheticImagesSpec& spec) : spec_(spec) {
  at::Generator gen = generator_for(spec.seed);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  const torch::Tensor grid =
      at::normal(0.0, 1.0, {spec.classes, spec.channels, kPatternGrid, kPatternGrid}, gen, f32);
  const torch::Tensor patterns =
      torch::nn::functional::interpolate(grid, torch::nn::functional::InterpolateFuncOptions()
                                                   .size(std::vector<int64_t>{spec.size, spec.size})
                                                   .mode(torch::kBilinear)
                                                   .align_corners(false));
  labels_ = at::randint(spec.classes, {spec.samples}, gen, i64);
  const torch::Tensor shifts = at::randint(-kMaxShift, kMaxShift + 1, {spec.samples, 2}, gen, i64);
  const torch::Tensor contrast =
      1.0 - kContrastSpread + 2 * kContrastSpread * at::rand({spec.samples}, gen, f32);
  images_ = at::normal(0.0, kNoise, {spec.samples, spec.channels, spec.size, spec.size}, gen, f32);
  const auto label = labels_.accessor<int64_t, 1>();
  const auto shift = shifts.accessor<int64_t, 2>();
  const auto scale = contrast.accessor<float, 1>();
  for (int64_t i = 0; i < spec.samples; ++i) {
    images_[i].add_(patterns[label[i]].roll({shift[i][0], shift[i][1]}, {1, 2}) * scale[i]);
  }
}

Batch SyntheticImages::get(const torch::Tensor& indices) const {
  return {images_.index_select(0, indices), labels_.index_select(0, indices)};
}

DatasetInfo SyntheticImages::info() const {
  return {Task::kClassification, {spec_.channels, spec_.size, spec_.size}, spec_.classes};
}

std::string SyntheticImages::describe() const {
  return fmt::format("synthetic images: {} samples of [{}, {}, {}], {} classes", spec_.samples,
                     spec_.channels, spec_.size, spec_.size, spec_.classes);
}

}  // namespace ddpt
