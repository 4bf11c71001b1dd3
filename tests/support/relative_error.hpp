// How far a float32 result is from its float64 reference, for the tests that compare ddptrain's
// CPU kernels with LibTorch's arithmetic.
#pragma once

#include <torch/torch.h>

#include <algorithm>

namespace ddpt::testing {

// Largest |a - b| relative to the largest |b| (b the reference; an all-zero b counts as 1e-30).
inline double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-30);
  return (a.to(torch::kDouble) - b).abs().max().item<double>() / scale;
}

}  // namespace ddpt::testing
