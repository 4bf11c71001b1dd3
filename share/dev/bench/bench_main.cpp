// ddptrain-bench BENCHMARK [ARGS...]: the C++ benchmarks (not tests; they print figures). Each
// file of this folder is one benchmark; the scripts beside them run them against their anchors.
#include <cstdio>
#include <cstring>

#include "benchmarks.hpp"

namespace {

struct Benchmark {
  const char* name;
  int (*run)(int, char**);
  const char* usage;
};

constexpr Benchmark kBenchmarks[] = {
    {"linear", ddpt::bench::run_linear,
     "[THREADS] [REPEATS]  one linear layer, LibTorch's against ddptrain's"},
    {"attention", ddpt::bench::run_attention,
     "[THREADS] [REPEATS]  causal self-attention, tensor ops against the fused kernel"},
    {"optimizer", ddpt::bench::run_optimizer,
     "[THREADS] [STEPS]    one AdamW step, LibTorch's against FusedAdamW"},
    {"copy-sum", ddpt::bench::run_copy_sum,
     "[REPEATS]            the node-shared sum's loop per instruction set"},
    {"gpt-ops", ddpt::bench::run_gpt_ops,
     "[STEPS] [TRACE]      the built-in GPT's steps and a profiler trace (gpt_op_profile.sh)"},
    {"checkpoint", ddpt::bench::run_checkpoint,
     "[DIR]                checkpoint write and read under mpirun (checkpoint_io.sh)"},
};

void print_usage(std::FILE* to) {
  std::fprintf(to, "usage: ddptrain-bench BENCHMARK [ARGS...]\n\nbenchmarks:\n");
  for (const Benchmark& b : kBenchmarks) std::fprintf(to, "  %-11s %s\n", b.name, b.usage);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(stdout);
    return 0;
  }
  for (const Benchmark& b : kBenchmarks) {
    if (std::strcmp(argv[1], b.name) == 0) return b.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "ddptrain-bench: no benchmark '%s'\n", argv[1]);
  print_usage(stderr);
  return 2;
}
