// Benchmark (not a test; prints figures): forward and backward of one linear layer (y = x W^T + b
// and the gradients of x, W and b), LibTorch's linear (Debian: OpenBLAS) against ddptrain's
// (src/models/linear.hpp: oneDNN's sgemm where built with it), taking turns in one process (the
// machine is noisy), on the torch intra-op threads given (default 1). Shapes: the layers of
// gpt_ddp.sh's GPT, of scaling_mlp.sh's MLP and of GPT-2 small at 1024 tokens. Prints the median
// ms per call, the GFLOP/s of the three products and the ratio.
// Usage: ddptrain-bench linear [THREADS] [REPEATS]
#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdlib>
#include <functional>
#include <vector>

#include "benchmarks.hpp"
#include "median.hpp"
#include "models/cpu_gemm.hpp"
#include "models/linear.hpp"
#include "util/stopwatch.hpp"

// OpenBLAS says which kernels it runs (OPENBLAS_CORETYPE or its own CPU detection); weak, so that
// another BLAS behind LibTorch leaves it null.
extern "C" char* openblas_get_corename() __attribute__((weak));

namespace ddpt::bench::linear_step {

using Linear =
    std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
using ddpt::bench::median;

// Median ms of forward + backward over `repeats` calls after two warm-up calls.
double ms_per_call(const Linear& linear, const torch::Tensor& x, const torch::Tensor& w,
                   const torch::Tensor& b, const torch::Tensor& upstream, int repeats) {
  std::vector<double> times;
  for (int r = -2; r < repeats; ++r) {
    const torch::Tensor xi = x.detach().requires_grad_(true);
    const torch::Tensor wi = w.detach().requires_grad_(true);
    const torch::Tensor bi = b.detach().requires_grad_(true);
    ddpt::Stopwatch watch;
    linear(xi, wi, bi).backward(upstream);
    if (r >= 0) times.push_back(watch.seconds() * 1e3);
  }
  return median(times);
}

void compare(const char* name, int64_t rows, int64_t in, int64_t out, int repeats) {
  const torch::Tensor x = torch::randn({rows, in});
  const torch::Tensor w = torch::randn({out, in}) / std::sqrt(static_cast<double>(in));
  const torch::Tensor b = torch::randn({out});
  const torch::Tensor upstream = torch::randn({rows, out});
  const Linear libtorch = [](const torch::Tensor& xi, const torch::Tensor& wi,
                             const torch::Tensor& bi) {
    return torch::nn::functional::linear(xi, wi, bi);
  };
  const Linear ours = [](const torch::Tensor& xi, const torch::Tensor& wi,
                         const torch::Tensor& bi) { return ddpt::linear(xi, wi, bi); };
  std::vector<double> libtorch_ms, ours_ms;
  for (int round = 0; round < 3; ++round) {  // in turn, so drifts of the machine hit both
    libtorch_ms.push_back(ms_per_call(libtorch, x, w, b, upstream, repeats));
    ours_ms.push_back(ms_per_call(ours, x, w, b, upstream, repeats));
  }
  const double flops = 3 * 2.0 * static_cast<double>(rows * in * out);  // forward, dx, dW
  const double a = median(libtorch_ms), o = median(ours_ms);
  fmt::print("{:<34} {:>8.3f} ({:>4.0f} GFLOP/s) {:>8.3f} ({:>4.0f} GFLOP/s) {:>6.2f}x\n", name, a,
             flops / a / 1e6, o, flops / o / 1e6, a / o);
}

}  // namespace ddpt::bench::linear_step

int ddpt::bench::run_linear(int argc, char** argv) {
  using namespace linear_step;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 30;
  torch::set_num_threads(threads);
  fmt::print("linear layer forward + backward, {} thread(s), median of 3 rounds of {} calls\n",
             threads, repeats);
  fmt::print("LibTorch's linear runs on: {}; ddptrain's on: {}\n",
             openblas_get_corename ? fmt::format("OpenBLAS ({} kernels)", openblas_get_corename())
                                   : std::string("LibTorch's BLAS"),
             ddpt::cpu_gemm_name());
  fmt::print("{:<34} {:>25} {:>25} {:>7}\n", "layer (rows x in -> out)", "LibTorch ms",
             "ddptrain ms", "ratio");
  compare("gpt_ddp.sh c_attn 1024x128->384", 1024, 128, 384, repeats);
  compare("gpt_ddp.sh c_fc 1024x128->512", 1024, 128, 512, repeats);
  compare("gpt_ddp.sh c_proj 1024x512->128", 1024, 512, 128, repeats);
  compare("scaling MLP 64x256->1024", 64, 256, 1024, repeats);
  compare("scaling MLP 64x1024->1024", 64, 1024, 1024, repeats);
  compare("GPT-2 small c_fc 1024x768->3072", 1024, 768, 3072, std::max(3, repeats / 10));
  return 0;
}
