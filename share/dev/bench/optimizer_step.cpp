// Benchmark (not a test; prints figures): one AdamW step over the parameters of the scaling MLP
// (256-1024-1024-1024-10, 3.4 M values) and of a GPT-2-small-sized set (124 M values), LibTorch's
// AdamW against ddptrain's FusedAdamW, taking turns in one process (the machine is noisy), on
// the torch intra-op threads given (default 1). Prints the median milliseconds per step and the
// ratio. Usage: ddptrain-bench optimizer [THREADS] [STEPS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "benchmarks.hpp"
#include "median.hpp"
#include "optim/fused_adamw.hpp"
#include "util/stopwatch.hpp"

namespace ddpt::bench::optimizer_step {

std::vector<torch::Tensor> parameters(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<torch::Tensor> params;
  for (const auto& shape : shapes) {
    params.push_back(torch::randn(shape));
    params.back().mutable_grad() = torch::randn(shape);
  }
  return params;
}

using ddpt::bench::median;

// Median ms per step of `optimizer`, over `steps` steps after two warm-up steps.
double ms_per_step(torch::optim::Optimizer& optimizer, int steps) {
  optimizer.step();
  optimizer.step();
  std::vector<double> times;
  for (int s = 0; s < steps; ++s) {
    ddpt::Stopwatch watch;
    optimizer.step();
    times.push_back(watch.seconds() * 1e3);
  }
  return median(times);
}

void compare(const char* name, const std::vector<std::vector<int64_t>>& shapes, int steps) {
  const auto options = torch::optim::AdamWOptions(1e-3).weight_decay(0.01);
  auto reference_params = parameters(shapes);
  auto fused_params = parameters(shapes);
  torch::optim::AdamW reference(reference_params, options);
  ddpt::FusedAdamW fused(fused_params, options);
  std::vector<double> torch_ms, fused_ms;
  for (int round = 0; round < 3; ++round) {  // in turn, so drifts of the machine hit both
    torch_ms.push_back(ms_per_step(reference, steps));
    fused_ms.push_back(ms_per_step(fused, steps));
  }
  int64_t values = 0;
  for (const auto& p : reference_params) values += p.numel();
  const double t = median(torch_ms), f = median(fused_ms);
  std::printf("%-22s %8.1f M values  torch AdamW %8.2f ms  FusedAdamW %8.2f ms  %5.2fx\n", name,
              values / 1e6, t, f, t / f);
}

}  // namespace ddpt::bench::optimizer_step

int ddpt::bench::run_optimizer(int argc, char** argv) {
  using namespace optimizer_step;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  torch::set_num_threads(threads);
  std::printf("AdamW step, %d thread(s), median of %d steps x 3 rounds\n", threads, steps);
  compare("scaling MLP",
          {{1024, 256}, {1024}, {1024, 1024}, {1024}, {1024, 1024}, {1024}, {10, 1024}, {10}},
          steps);
  std::vector<std::vector<int64_t>> gpt2{{50304, 768}, {1024, 768}};
  for (int layer = 0; layer < 12; ++layer) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{768},
                                                               {768},
                                                               {2304, 768},
                                                               {2304},
                                                               {768, 768},
                                                               {768},
                                                               {768},
                                                               {768},
                                                               {3072, 768},
                                                               {3072},
                                                               {768, 3072},
                                                               {768}}) {
      gpt2.push_back(shape);
    }
  }
  compare("GPT-2 small (124M)", gpt2, std::max(2, steps / 4));
  return 0;
}
