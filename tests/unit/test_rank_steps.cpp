#include <gtest/gtest.h>

#include "run/rank_steps.hpp"

namespace ddpt {
namespace {

// 10 steps of `forward_ms` + `backward_ms` compute, waiting `wait_ms` after backward.
RankSteps rank(const std::string& host, double forward_ms, double backward_ms, double wait_ms) {
  RankSteps r;
  r.host = host;
  r.split.steps = 10;
  r.split.forward = forward_ms * 10 / 1e3;
  r.split.backward = backward_ms * 10 / 1e3;
  r.split.comm_wait = wait_ms * 10 / 1e3;
  r.split.total = (forward_ms + backward_ms + wait_ms + 1) * 10 / 1e3;
  return r;
}

TEST(RankSteps, NamesTheSlowestRankAndItsHost) {
  // Rank 2 computes longest; the others wait for it.
  const std::vector<RankSteps> ranks{rank("node-a", 3, 4, 1.2), rank("node-a", 3, 3.9, 1.3),
                                     rank("node-b", 3.5, 4.6, 0.05)};
  EXPECT_EQ(describe_rank_steps(ranks),
            "forward + backward 6.90..8.10 ms per step, slowest rank 2 (node-b); comm wait "
            "0.05..1.30 ms");
}

TEST(RankSteps, SaysNothingForOneRankOrARankWithoutSteadySteps) {
  EXPECT_EQ(describe_rank_steps({rank("node-a", 3, 4, 0)}), "");
  std::vector<RankSteps> ranks{rank("node-a", 3, 4, 0), rank("node-a", 3, 4, 0)};
  ranks[1].split = StepSplit();
  EXPECT_EQ(describe_rank_steps(ranks), "");
}

}  // namespace
}  // namespace ddpt
