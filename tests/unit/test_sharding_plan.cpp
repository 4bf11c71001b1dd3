// The sharding plan (ddp/sharding_plan.hpp) as plan_sharding resolves it from a deck: the stage at
// work (none on one rank), what each stage shards, the ranks' shared parameters (not with a moving
// average), the prefetch by backend, the wire's precision, and the forms the memory check's
// advice and the batch-size search's trials take.
#include <gtest/gtest.h>

#include "comm/make_communicator.hpp"
#include "config/config.hpp"
#include "setup/sharding.hpp"

namespace ddpt {
namespace {

Config zero(int64_t level) {
  Config config;
  config.ddp.zero = level;
  return config;
}

const torch::Device kCpu(torch::kCPU);

TEST(ShardingPlan, EachStageShardsWhatTheOneBeforeItDidAndMore) {
  for (int64_t level = 0; level <= 3; ++level) {
    const ShardingPlan plan = plan_sharding(zero(level), 4, kCpu);
    EXPECT_EQ(plan.stage_number(), level);
    EXPECT_EQ(plan.requested, level);
    EXPECT_EQ(plan.shards, 4);
    EXPECT_EQ(plan.optimizer_sharded(), level >= 1);
    EXPECT_EQ(plan.gradients_sharded(), level >= 2);
    EXPECT_EQ(plan.parameters_sharded(), level >= 3);
    EXPECT_EQ(plan.initial_values(),
              level == 3 ? ParameterValues::kDeferred : ParameterValues::kInitialised);
    EXPECT_FALSE(plan.stage_dropped());
  }
}

TEST(ShardingPlan, OneRankShardsNothingAndSaysTheDeckAskedForMore) {
  const ShardingPlan plan = plan_sharding(zero(3), 1, kCpu);
  EXPECT_EQ(plan.stage, ZeroStage::kNone);
  EXPECT_FALSE(plan.optimizer_sharded());
  EXPECT_EQ(plan.initial_values(), ParameterValues::kInitialised);
  EXPECT_TRUE(plan.stage_dropped());
  EXPECT_EQ(plan.at_stage(ZeroStage::kParameters).stage, ZeroStage::kNone);
  EXPECT_FALSE(plan_sharding(zero(0), 1, kCpu).stage_dropped());
}

TEST(ShardingPlan, RanksShareTheParametersUnderZero1And2WithoutAMovingAverage) {
  EXPECT_FALSE(plan_sharding(zero(0), 2, kCpu).share_parameters());
  EXPECT_TRUE(plan_sharding(zero(1), 2, kCpu).share_parameters());
  EXPECT_TRUE(plan_sharding(zero(2), 2, kCpu).share_parameters());
  EXPECT_FALSE(plan_sharding(zero(3), 2, kCpu).share_parameters());
  Config averaged = zero(1);
  averaged.train.ema_decay = 0.99;
  EXPECT_TRUE(plan_sharding(averaged, 2, kCpu).moving_average);
  EXPECT_FALSE(plan_sharding(averaged, 2, kCpu).share_parameters());
}

TEST(ShardingPlan, PrefetchAutoFollowsTheBackend) {
  Config config = zero(3);
  ASSERT_EQ(config.ddp.prefetch, Prefetch::kAuto);
  EXPECT_FALSE(plan_sharding(config, 2, kCpu).prefetch) << "auto prefetched with MPI";
  EXPECT_EQ(plan_sharding(config, 2, torch::Device(torch::kCUDA, 0)).prefetch, nccl_compiled());
  config.ddp.backend = Backend::kNccl;
  EXPECT_TRUE(plan_sharding(config, 2, kCpu).prefetch);
  config.ddp.prefetch = Prefetch::kOff;
  EXPECT_FALSE(plan_sharding(config, 2, kCpu).prefetch);
  config.ddp.backend = Backend::kMpi;
  config.ddp.prefetch = Prefetch::kOn;
  EXPECT_TRUE(plan_sharding(config, 2, kCpu).prefetch);
}

TEST(ShardingPlan, WirePrecisionFollowsCompress) {
  Config config = zero(0);
  EXPECT_EQ(plan_sharding(config, 2, kCpu).wire_dtype, torch::kFloat);
  config.ddp.compress = WirePrecision::kBf16;
  EXPECT_EQ(plan_sharding(config, 2, kCpu).wire_dtype, torch::kBFloat16);
  config.ddp.compress = WirePrecision::kFp16;
  EXPECT_EQ(plan_sharding(config, 2, kCpu).wire_dtype, torch::kHalf);
}

TEST(ShardingPlan, TrialsRunZero3AsZero2AndOtherStagesAsThey) {
  EXPECT_EQ(plan_sharding(zero(3), 2, kCpu).for_trial().stage, ZeroStage::kGradients);
  for (int64_t level = 0; level <= 2; ++level) {
    EXPECT_EQ(plan_sharding(zero(level), 2, kCpu).for_trial().stage_number(), level);
  }
  // The trial's ZeRO-2 shares the parameters as a ZeRO-2 run would.
  EXPECT_TRUE(plan_sharding(zero(3), 2, kCpu).for_trial().share_parameters());
}

}  // namespace
}  // namespace ddpt
