// The next token's choice (generate/sampling.hpp): greedy takes the most likely token; a draw
// depends only on (seed, row, position); sampling follows the temperature's softmax, and top_k
// and top_p cut it; the log-probability is the model's.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "generate/sampling.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

torch::Tensor logits_of(const std::vector<double>& values) {
  return torch::tensor(values, torch::kDouble).to(torch::kFloat);
}

SamplingOptions sampled(double temperature, int64_t top_k = 0, double top_p = 1) {
  return {temperature, top_k, top_p, /*seed=*/7};
}

TEST(Sampling, DrawsDependOnSeedRowAndPositionOnly) {
  EXPECT_EQ(uniform_draw(1, 2, 3), uniform_draw(1, 2, 3));
  std::set<double> distinct;
  for (const auto& [seed, row, position] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 2, 3}, {2, 2, 3}, {1, 3, 3}, {1, 2, 4}, {1, 3, 2}}) {
    const double u = uniform_draw(seed, row, position);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    distinct.insert(u);
  }
  EXPECT_EQ(distinct.size(), 5U);
  double sum = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) sum += uniform_draw(3, i % 100, i / 100);
  EXPECT_NEAR(sum / kDraws, 0.5, 0.01);
}

TEST(Sampling, GreedyTakesTheMostLikelyTokenAndTheLowestIdAmongEquals) {
  const TokenChoice choice = choose_token(logits_of({0.5, 2.0, -1.0, 2.0}), {}, 0, 0);
  EXPECT_EQ(choice.token, 1);
  const double total = std::log(std::exp(0.5) + 2 * std::exp(2.0) + std::exp(-1.0));
  EXPECT_NEAR(choice.logprob, 2.0 - total, 1e-6);
}

TEST(Sampling, TopKOfOneIsGreedyWhateverTheTemperature) {
  const torch::Tensor logits = logits_of({0.1, 0.3, 0.2, 0.25});
  for (int64_t position = 0; position < 50; ++position) {
    EXPECT_EQ(choose_token(logits, sampled(5.0, /*top_k=*/1), 0, position).token, 1);
  }
}

TEST(Sampling, FollowsTheTemperaturesSoftmaxAndKeepsTheModelsLogprob) {
  const std::vector<double> values{0.0, 1.0, 2.0};
  const double temperature = 2.0;
  std::vector<double> expected;
  double total = 0;
  for (const double v : values) total += std::exp(v / temperature);
  for (const double v : values) expected.push_back(std::exp(v / temperature) / total);
  std::vector<int> counts(3, 0);
  constexpr int kDraws = 20000;
  const double model_total = std::log(1 + std::exp(1.0) + std::exp(2.0));
  for (int i = 0; i < kDraws; ++i) {
    const TokenChoice c = choose_token(logits_of(values), sampled(temperature), i % 50, i / 50);
    ++counts[c.token];
    EXPECT_NEAR(c.logprob, values[c.token] - model_total, 1e-6);
  }
  // Binomial standard deviations at 20000 draws are below 0.0036: 0.015 is over four of them.
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_NEAR(counts[t] / static_cast<double>(kDraws), expected[t], 0.015) << "token " << t;
  }
}

TEST(Sampling, TopPKeepsTheSmallestSetThatReachesIt) {
  // Probabilities about 0.64, 0.24, 0.09, 0.03: top_p = 0.8 keeps the first two.
  const torch::Tensor logits = logits_of({3.0, 2.0, 1.0, 0.0});
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 4000; ++i) ++counts[choose_token(logits, sampled(1.0, 0, 0.8), 0, i).token];
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_EQ(counts[3], 0);
  // Renormalised over the two: 0.64 / 0.88 = 0.73.
  EXPECT_NEAR(counts[0] / 4000.0, std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 0.03);
}

TEST(Sampling, TopKAndTopPTogetherCutTheTopKFirst) {
  // top_k = 3 leaves 0.64, 0.24, 0.09 (0.97); top_p = 0.95 of that keeps all three.
  const torch::Tensor logits = logits_of({3.0, 2.0, 1.0, 0.0});
  std::set<int64_t> seen;
  for (int i = 0; i < 4000; ++i)
    seen.insert(choose_token(logits, sampled(1.0, 3, 0.95), 1, i).token);
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2}));
}

TEST(Sampling, LogitsThatAreNotFiniteAreANumericalFailure) {
  const torch::Tensor logits = logits_of({0.0, std::nan(""), 1.0});
  try {
    choose_token(logits, {}, 3, 9);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kNumerical);
    EXPECT_NE(std::string(e.what()).find("row 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddpt
