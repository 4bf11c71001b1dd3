// N ranks with per-rank batch B must end where 1 rank with batch N*B ends (same global batches,
// same initial model): ||p_N - p_1|| / ||p_1|| < 1e-5 for every parameter, float32.
// Runs at any world size; ctest runs it at 1, 2 and 3 ranks. The 1-rank reference is trained on
// MPI_COMM_SELF inside the same processes.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/training_fixture.hpp"

namespace ddpt::testing {
namespace {

constexpr double kTolerance = 1e-5;  // float32, summation order differs between the two runs
constexpr double kMustMove = 1e-3;   // training must have changed the parameters this much

struct Case {
  OptimizerType optimizer;
  int64_t grad_accum;
  bool torchscript;
};

void expect_equivalent(const Case& c) {
  Config distributed = small_config(c.optimizer);
  if (c.torchscript) {
    const std::string path = torchscript_test_model();
    ASSERT_FALSE(path.empty()) << "DDPTRAIN_TEST_TORCHSCRIPT is not set (ctest sets it)";
    distributed.model.type = ModelType::kTorchScript;
    distributed.model.path = path;
  }
  distributed.train.grad_accum = c.grad_accum;
  Config reference = distributed;
  reference.train.batch_size = distributed.train.batch_size * c.grad_accum * world_size();
  reference.train.grad_accum = 1;

  const auto initial = initial_parameters(distributed);
  const auto on_n_ranks = train_and_get_parameters(distributed, MPI_COMM_WORLD);
  const auto on_one_rank = train_and_get_parameters(reference, MPI_COMM_SELF);

  EXPECT_GT(max_relative_difference(on_one_rank, initial), kMustMove) << "training did not move";
  EXPECT_LT(max_relative_difference(on_n_ranks, on_one_rank), kTolerance)
      << world_size() << " ranks x batch " << distributed.train.batch_size << " x accum "
      << c.grad_accum << " vs 1 rank x batch " << reference.train.batch_size;
}

TEST(DdpEquivalence, MlpSgdMomentum) {
  expect_equivalent({OptimizerType::kSgd, 1, false});
}
TEST(DdpEquivalence, MlpAdamW) {
  expect_equivalent({OptimizerType::kAdamW, 1, false});
}
TEST(DdpEquivalence, MlpGradAccum4) {
  expect_equivalent({OptimizerType::kSgd, 4, false});
}
TEST(DdpEquivalence, MlpAdamWGradAccum4) {
  expect_equivalent({OptimizerType::kAdamW, 4, false});
}
TEST(DdpEquivalence, TorchScriptSgd) {
  expect_equivalent({OptimizerType::kSgd, 1, true});
}
TEST(DdpEquivalence, TorchScriptAdamWGradAccum4) {
  expect_equivalent({OptimizerType::kAdamW, 4, true});
}

// The comparison itself: a parameter that is not finite, after one that is equal, fails it by
// name (std::max(worst, NaN) would keep worst and pass), and its result fails EXPECT_LT/EXPECT_GT.
TEST(DdpEquivalence, ComparisonFailsOnAParameterThatIsNotFinite) {
  torch::manual_seed(3);
  const std::vector<torch::Tensor> reference = {torch::randn({4, 3}), torch::randn({7})};
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    std::vector<torch::Tensor> broken = {reference[0].clone(), reference[1].clone()};
    broken[1][2] = bad;
    double difference = 0;
    EXPECT_NONFATAL_FAILURE(difference = max_relative_difference(broken, reference),
                            "parameter 1 (shape [7]): relative difference");
    EXPECT_TRUE(std::isnan(difference)) << difference;
    EXPECT_NONFATAL_FAILURE(max_relative_difference(reference, broken),
                            "parameter 1 (shape [7]): relative difference");
  }
  EXPECT_EQ(max_relative_difference(reference, reference), 0.0);
}

}  // namespace
}  // namespace ddpt::testing
