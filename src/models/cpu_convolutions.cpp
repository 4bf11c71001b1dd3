#include "models/cpu_convolutions.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "util/log.hpp"

namespace ddpt {
namespace {

struct ConvolutionCase {
  int64_t batch, in, out, kernel, stride, size;
};

// Small cases of the failing kind (stride 1, channels off oneDNN's 8- and 16-channel blocks, a
// batch of several images: one image was right) and two of the kinds that were right, so that a
// new failure elsewhere shows too. All of them together take a few tens of milliseconds
// (benchmarks.md, "Choices measured": convolution check).
constexpr std::array<ConvolutionCase, 5> kCases = {{
    {4, 4, 4, 3, 1, 8},
    {4, 3, 8, 5, 1, 8},
    {4, 8, 12, 3, 1, 6},
    {4, 8, 24, 3, 2, 8},
    {4, 16, 16, 1, 1, 4},
}};

// Float32 results more than this far from float64's, relative to the largest value, are wrong:
// rounding gave at most 5e-6 in the cases measured, the failures 0.33 and more.
constexpr double kTolerance = 1e-4;

// The output, input gradient and weight gradient of one convolution.
struct Convolved {
  torch::Tensor output, input_grad, weight_grad;
};

Convolved convolve(const ConvolutionCase& c, const torch::Tensor& input,
                   const torch::Tensor& weight, const torch::Tensor& upstream) {
  const torch::AutoGradMode grad_on(true);
  const torch::Tensor x = input.detach().clone().requires_grad_(true);
  const torch::Tensor w = weight.detach().clone().requires_grad_(true);
  const torch::Tensor y = torch::conv2d(x, w, {}, c.stride, c.kernel / 2);
  const auto grads = torch::autograd::grad({y}, {x, w}, {upstream});
  return {y.detach(), grads[0], grads[1]};
}

// Largest |a - b| relative to the largest |b|; infinity where a holds a NaN.
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-30);
  const double error = (a.to(torch::kDouble) - b).abs().max().item<double>() / scale;
  return std::isnan(error) ? INFINITY : error;
}

// What oneDNN got wrong in one case, or nothing. oneDNN must be on when this is called.
std::optional<std::string> onednn_error(const ConvolutionCase& c, at::Generator& generator) {
  leave_nan_in_freed_memory();
  const auto options = torch::TensorOptions().dtype(torch::kFloat);
  const torch::Tensor x = at::randn({c.batch, c.in, c.size, c.size}, generator, options);
  const torch::Tensor w = at::randn({c.out, c.in, c.kernel, c.kernel}, generator, options);
  const int64_t out_size = (c.size + 2 * (c.kernel / 2) - c.kernel) / c.stride + 1;
  const torch::Tensor g = at::randn({c.batch, c.out, out_size, out_size}, generator, options);
  const Convolved got = convolve(c, x, w, g);
  // Float64 never goes to oneDNN: ATen's own kernels.
  const Convolved want =
      convolve(c, x.to(torch::kDouble), w.to(torch::kDouble), g.to(torch::kDouble));
  const std::array<std::pair<const char*, double>, 3> errors = {{
      {"output", relative_error(got.output, want.output)},
      {"input gradient", relative_error(got.input_grad, want.input_grad)},
      {"weight gradient", relative_error(got.weight_grad, want.weight_grad)},
  }};
  for (const auto& [what, error] : errors) {
    if (error <= kTolerance) continue;
    const std::string how =
        std::isinf(error) ? std::string("was not finite")
                          : fmt::format("was off by {:.0f}% of its largest value", 100 * error);
    return fmt::format(
        "the {} of a {}x{} convolution of {} to {} channels (stride {}, {} images of "
        "{}x{}) {}",
        what, c.kernel, c.kernel, c.in, c.out, c.stride, c.batch, c.size, c.size, how);
  }
  return std::nullopt;
}

CpuConvolutions check_and_choose() {
  CpuConvolutions chosen;
  if (!at::hasMKLDNN()) {
    chosen.text = "LibTorch's own kernels (LibTorch was built without oneDNN)";
    return chosen;
  }
  at::globalContext().setUserEnabledMkldnn(true);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/2026);
  for (const ConvolutionCase& c : kCases) {
    if (const auto error = onednn_error(c, generator)) {
      at::globalContext().setUserEnabledMkldnn(false);
      chosen.text = "LibTorch's own kernels (oneDNN's gave wrong results here)";
      chosen.problem = fmt::format(
          "LibTorch {}'s oneDNN convolutions are wrong on this machine ({}): CPU convolutions "
          "run on LibTorch's own kernels instead",
          TORCH_VERSION, *error);
      return chosen;
    }
  }
  chosen.onednn = true;
  chosen.text = "oneDNN (checked against LibTorch's own kernels)";
  return chosen;
}

}  // namespace

void leave_nan_in_freed_memory() {
  // Sizes from 64 B to 512 KiB, four of each, all alive at once so that none reuses another's
  // memory: the buffers of a convolution of a few images fall in that range.
  std::vector<torch::Tensor> filled;
  for (int64_t floats = 16; floats <= (int64_t{1} << 17); floats *= 2) {
    for (int64_t step = 0; step < 4; ++step) {
      filled.push_back(torch::full({floats + step * floats / 4}, NAN, torch::kFloat));
    }
  }
}

const CpuConvolutions& choose_cpu_convolutions() {
  static const CpuConvolutions chosen = check_and_choose();
  return chosen;
}

void warn_of_cpu_convolution_problem(const Job& job) {
  if (job.device.device.is_cuda()) return;
  const CpuConvolutions& convolutions = choose_cpu_convolutions();
  if (!convolutions.problem.empty() && job.topology.local_rank == 0) {
    spdlog::warn("{}", convolutions.problem);
  }
}

}  // namespace ddpt
