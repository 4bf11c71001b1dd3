// Benchmark (not a test; prints figures): forward and backward of the built-in GPT's causal
// self-attention (from the packed qkv to its gradient), the tensor operations that LibTorch 1.x
// runs against ddptrain's fused CPU kernel (src/models/causal_attention.cpp), taking turns in one
// process (the machine is noisy), on the torch intra-op threads given (default 1). Shapes: the
// gpt_tokens deck at 2 ranks, the gpt_ddp.sh benchmark's GPT, and one GPT-2-small layer at a
// 1024-token context. Prints the median milliseconds per layer and the ratio.
// Usage: ddptrain-bench attention [THREADS] [REPEATS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "benchmarks.hpp"
#include "median.hpp"
#include "models/causal_attention.hpp"
#include "util/stopwatch.hpp"

namespace ddpt::bench::attention_step {

using Kernel = std::function<torch::Tensor(const torch::Tensor&)>;

using ddpt::bench::median;

// Median ms of forward + backward over `repeats` calls after two warm-up calls.
double ms_per_call(const Kernel& kernel, const torch::Tensor& in, const torch::Tensor& upstream,
                   int repeats) {
  std::vector<double> times;
  for (int r = -2; r < repeats; ++r) {
    const torch::Tensor input = in.detach().requires_grad_(true);
    ddpt::Stopwatch watch;
    kernel(input).backward(upstream);
    if (r >= 0) times.push_back(watch.seconds() * 1e3);
  }
  return median(times);
}

void compare(const char* name, int64_t batch, int64_t time, int64_t width, int64_t heads,
             int repeats) {
  const torch::Tensor qkv = torch::randn({batch, time, 3 * width});
  const torch::Tensor upstream = torch::randn({batch, time, width});
  const Kernel tensor_ops = [&](const torch::Tensor& x) {
    return ddpt::reference_causal_self_attention(x, heads, 0.0, true);
  };
  const Kernel fused = [&](const torch::Tensor& x) {
    return ddpt::fused_causal_self_attention(x, heads);
  };
  std::vector<double> tensor_ops_ms, fused_ms;
  for (int round = 0; round < 3; ++round) {  // in turn, so drifts of the machine hit both
    tensor_ops_ms.push_back(ms_per_call(tensor_ops, qkv, upstream, repeats));
    fused_ms.push_back(ms_per_call(fused, qkv, upstream, repeats));
  }
  const double t = median(tensor_ops_ms), f = median(fused_ms);
  std::printf("%-26s [%3lld, %4lld, %4lld] / %2lld %12.2f ms %9.2f ms %6.2fx\n", name,
              static_cast<long long>(batch), static_cast<long long>(time),
              static_cast<long long>(width), static_cast<long long>(heads), t, f, t / f);
}

}  // namespace ddpt::bench::attention_step

int ddpt::bench::run_attention(int argc, char** argv) {
  using namespace attention_step;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  if (!ddpt::fused_causal_attention_available(torch::zeros({1}))) {
    std::printf("this build has no fused CPU attention (no BLAS found at configure time)\n");
    return 1;
  }
  std::printf(
      "causal self-attention of one GPT layer, forward + backward, float32, %d thread(s), "
      "median of 3 x %d\n%-26s %-23s %15s %12s %7s\n",
      threads, repeats, "", "qkv [N, T, C] / heads", "tensor ops", "fused", "ratio");
  compare("gpt_tokens.cfg, per rank", 8, 32, 64, 4, repeats);
  compare("bench/gpt_ddp.sh", 16, 64, 128, 4, repeats);
  compare("GPT-2 small", 1, 1024, 768, 12, std::max(1, repeats / 4));
  return 0;
}
