// Benchmark (not a test; prints figures): the node-shared sum's kernels (src/comm/copy_sum.hpp) on
// one rank's share of the scaling MLP's two gradient buckets at 2 ranks (1.06 M and 1.31 M floats,
// half each): ZeRO-1's reduce-scatter (into an output, with the sum of squares) and the plain
// all-reduce (into both copies, no squares). Each kernel the CPU runs takes its turn, REPEATS
// rounds of 200 calls; prints the median microseconds per call and the spread of the rounds'
// medians. One process: both copies are this core's, so this is the loop's own cost, not the cost
// of fetching the other rank's copy. Usage: ddptrain-bench copy-sum [REPEATS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "benchmarks.hpp"
#include "comm/copy_sum.hpp"
#include "median.hpp"
#include "util/stopwatch.hpp"

namespace ddpt::bench::copy_sum {

using ddpt::CopySumKernel;

struct Case {
  const char* name;
  int64_t n;
  bool reduce_scatter;  // else all-reduce
};

// Median microseconds of one call, over `calls` calls.
double microseconds(CopySumKernel kernel, const Case& c, std::vector<std::vector<float>>& copies,
                    std::vector<float>& output, int calls) {
  std::vector<const float*> from;
  std::vector<float*> into;
  for (auto& copy : copies) {
    from.push_back(copy.data());
    if (!c.reduce_scatter) into.push_back(copy.data());
  }
  if (c.reduce_scatter) into.push_back(output.data());
  double squares = 0;
  std::vector<double> times;
  for (int call = 0; call < calls; ++call) {
    ddpt::Stopwatch watch;
    ddpt::sum_copies<float>(kernel, from, c.n, into, c.reduce_scatter ? &squares : nullptr);
    times.push_back(watch.seconds() * 1e6);
  }
  return ddpt::bench::median(times);
}

}  // namespace ddpt::bench::copy_sum

int ddpt::bench::run_copy_sum(int argc, char** argv) {
  using namespace copy_sum;
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const Case cases[] = {{"reduce-scatter 0.53 M (bucket 1)", 530'000, true},
                        {"reduce-scatter 0.66 M (bucket 2)", 656'000, true},
                        {"all-reduce 0.53 M (bucket 1)", 530'000, false},
                        {"all-reduce 0.66 M (bucket 2)", 656'000, false}};
  const auto& kernels = ddpt::runnable_copy_sum_kernels();
  std::printf("node-shared sum, 2 copies of float, median us per call over %d rounds of 200\n",
              repeats);
  for (const Case& c : cases) {
    std::vector<std::vector<float>> copies(2, std::vector<float>(c.n));
    for (int64_t i = 0; i < c.n; ++i) {
      copies[0][i] = 1e-3f * static_cast<float>(i % 1013) - 0.3f;
      copies[1][i] = 1e-4f * static_cast<float>(i % 977);
    }
    std::vector<float> output(c.n);
    std::vector<std::vector<double>> rounds(kernels.size());
    for (int r = 0; r < repeats; ++r) {
      for (size_t k = 0; k < kernels.size(); ++k) {
        rounds[k].push_back(microseconds(kernels[k], c, copies, output, 200));
      }
    }
    std::printf("%-34s", c.name);
    for (size_t k = 0; k < kernels.size(); ++k) {
      const auto [low, high] = std::minmax_element(rounds[k].begin(), rounds[k].end());
      std::printf("  %s %6.1f (%.1f..%.1f)", ddpt::copy_sum_kernel_name(kernels[k]),
                  ddpt::bench::median(rounds[k]), *low, *high);
    }
    std::printf("\n");
  }
  return 0;
}
