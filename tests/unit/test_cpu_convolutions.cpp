// LibTorch's float32 CPU convolutions, as ddptrain runs them once models/cpu_convolutions.hpp has
// chosen their kernels, against the same convolutions in float64 (ATen's own kernels): outputs
// and gradients, for the shapes oneDNN 3.7.2 got wrong under Debian 13's LibTorch 2.6 (stride 1,
// channel counts off its 8- and 16-channel blocks) and for the CNN's usual ones. Each case runs
// three times, each time with NaN left in the allocator's freed memory: the wrong gradients read
// memory oneDNN never wrote, and were right where it happened to be zero.
#include <gtest/gtest.h>

#include "models/cpu_convolutions.hpp"
#include "support/relative_error.hpp"

namespace ddpt {
namespace {

struct ConvolutionCase {
  int64_t batch, in, out, kernel, stride, size;
};

using ddpt::testing::relative_error;

std::vector<torch::Tensor> convolve(const ConvolutionCase& c, const torch::Tensor& input,
                                    const torch::Tensor& weight, const torch::Tensor& upstream) {
  const torch::Tensor x = input.clone().requires_grad_(true);
  const torch::Tensor w = weight.clone().requires_grad_(true);
  const torch::Tensor y = torch::conv2d(x, w, {}, c.stride, c.kernel / 2);
  y.backward(upstream);
  return {y.detach(), x.grad(), w.grad()};
}

TEST(CpuConvolutions, MatchFloat64OnceChosen) {
  choose_cpu_convolutions();
  const std::vector<ConvolutionCase> cases = {
      {11, 2, 4, 3, 1, 8},   {11, 4, 4, 3, 1, 8},   {11, 4, 8, 3, 2, 8},   {11, 8, 8, 3, 1, 4},
      {11, 4, 8, 1, 2, 8},   {4, 3, 8, 5, 1, 12},   {8, 24, 24, 3, 1, 10}, {8, 40, 40, 3, 1, 6},
      {8, 16, 16, 3, 1, 16}, {4, 64, 64, 3, 1, 16}, {1, 4, 4, 3, 1, 8}};
  torch::manual_seed(7);
  for (const ConvolutionCase& c : cases) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      const torch::Tensor x = torch::randn({c.batch, c.in, c.size, c.size});
      const torch::Tensor w = torch::randn({c.out, c.in, c.kernel, c.kernel});
      const int64_t out_size = (c.size + 2 * (c.kernel / 2) - c.kernel) / c.stride + 1;
      const torch::Tensor g = torch::randn({c.batch, c.out, out_size, out_size});
      leave_nan_in_freed_memory();
      const auto got = convolve(c, x, w, g);
      const auto want =
          convolve(c, x.to(torch::kDouble), w.to(torch::kDouble), g.to(torch::kDouble));
      const char* names[] = {"output", "input gradient", "weight gradient"};
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_LT(relative_error(got[i], want[i]), 1e-4)
            << names[i] << " of a " << c.kernel << "x" << c.kernel << " convolution of " << c.in
            << " to " << c.out << " channels, stride " << c.stride << ", " << c.batch
            << " images of " << c.size << "x" << c.size << " (" << choose_cpu_convolutions().text
            << ")";
      }
    }
  }
}

TEST(CpuConvolutions, SayWhatRunsThem) {
  const CpuConvolutions& chosen = choose_cpu_convolutions();
  EXPECT_EQ(&chosen, &choose_cpu_convolutions()) << "checked once per process";
  EXPECT_EQ(chosen.onednn, at::hasMKLDNN() && at::globalContext().userEnabledMkldnn());
  if (chosen.onednn) {
    EXPECT_EQ(chosen.text, "oneDNN (checked against LibTorch's own kernels)");
    EXPECT_TRUE(chosen.problem.empty());
  } else {
    EXPECT_NE(chosen.text.find("LibTorch's own kernels"), std::string::npos) << chosen.text;
    EXPECT_EQ(chosen.problem.empty(), !at::hasMKLDNN()) << chosen.problem;
  }
}

// A suite of its own: ctest runs each suite in a process of its own
// (tests/cmake/GtestSuites.cmake), so the check runs here, not in an earlier test of the process.
TEST(CpuConvolutionsFirstCall, LeavesTheSeededGeneratorAlone) {
  torch::manual_seed(11);
  const torch::Tensor before = torch::randn({4});
  torch::manual_seed(11);
  choose_cpu_convolutions();
  EXPECT_TRUE(torch::equal(torch::randn({4}), before));
}

}  // namespace
}  // namespace ddpt
