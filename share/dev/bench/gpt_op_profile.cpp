// Benchmark (not a test; prints figures): where a training step of the built-in GPT spends its
// time, operation by operation. The GPT of share/dev/bench/gpt_ddp.sh (vocab 256, block 64, 4
// layers, 4 heads, 128 wide, batch 16), on one rank and one thread, trains on random tokens with
// AdamW as ddptrain makes it (FusedAdamW); after a warm-up, STEPS steps are timed, then STEPS more
// run under LibTorch's profiler, whose trace goes to TRACE (Chrome's trace format).
// share/dev/bench/gpt_op_profile.sh runs this beside the same profile of PyTorch eager and prints
// both, operation by operation (op_profile_table.py).
// Usage: ddptrain-bench gpt-ops [STEPS] [TRACE]   (defaults 20, /tmp/ddptrain_gpt_ops.json)
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "benchmarks.hpp"
#include "models/gpt.hpp"
#include "optim/optimizer.hpp"
#include "runtime/process_tuning.hpp"
#include "util/stopwatch.hpp"

int ddpt::bench::run_gpt_ops(int argc, char** argv) {
  using namespace ddpt;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string trace = argc > 2 ? argv[2] : "/tmp/ddptrain_gpt_ops.json";
  tune_process();  // as ddptrain does: malloc keeps freed memory
  torch::set_num_threads(1);
  torch::manual_seed(1);
  const GptSpec spec;  // the defaults are gpt_ddp.sh's
  constexpr int64_t kBatch = 16;
  Gpt gpt(spec);
  gpt.train(true);
  OptimizerSpec adamw;
  adamw.lr = 2e-3;
  adamw.weight_decay = 0.1;
  adamw.beta2 = 0.99;
  const auto optimizer = make_optimizer(adamw, gpt.named_parameters());
  const torch::Tensor tokens = torch::randint(0, spec.vocab, {kBatch, spec.block + 1});
  const torch::Tensor inputs = tokens.narrow(1, 0, spec.block).contiguous();
  const torch::Tensor targets = tokens.narrow(1, 1, spec.block).contiguous();
  const auto step = [&] {
    optimizer->zero_grad();
    const torch::Tensor logits = gpt.forward(inputs);
    torch::nn::functional::cross_entropy(logits.view({-1, spec.vocab}), targets.view({-1}))
        .backward();
    optimizer->step();
  };
  for (int i = 0; i < 10; ++i) step();
  const Stopwatch timed;
  for (int i = 0; i < steps; ++i) step();
  std::printf("ddptrain built-in GPT: %.2f ms per step without the profiler (%d steps)\n",
              timed.seconds() * 1e3 / steps, steps);
  {
    const torch::autograd::profiler::RecordProfile profile(trace);
    for (int i = 0; i < steps; ++i) step();
  }
  std::printf("trace of %d steps: %s\n", steps, trace.c_str());
  return 0;
}
