// Learning rate schedules, parameter groups (no weight decay on 1-D parameters), and one
// optimizer step of AdamW and Nesterov SGD, each against a hand computation.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "optim/lr_schedule.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_state.hpp"
#include "setup/run_options.hpp"

namespace ddpt {
namespace {

LrScheduleSpec schedule(LrScheduleType kind, int64_t warmup, int64_t decay_end = 110) {
  LrScheduleSpec c;
  c.peak = 0.6;
  c.min_lr = 0.06;
  c.type = kind;
  c.warmup = warmup;
  c.decay_end = decay_end;
  c.step_size = 30;
  c.gamma = 0.5;
  return c;
}

TEST(LrSchedule, WarmupThenCosineToMinLr) {
  const LrSchedule s(schedule(LrScheduleType::kCosine, 10, /*decay_end=*/110));
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.06);     // 0.6 x 1/10
  EXPECT_DOUBLE_EQ(s.lr_at(4), 0.30);     // 0.6 x 5/10
  EXPECT_DOUBLE_EQ(s.lr_at(9), 0.6);      // end of warmup: the peak
  EXPECT_DOUBLE_EQ(s.lr_at(10), 0.6);     // cosine starts at the peak
  EXPECT_NEAR(s.lr_at(60), 0.33, 1e-12);  // half way: (peak + min) / 2
  // A quarter of the way: min + (peak - min) x (1 + cos(pi/4)) / 2.
  EXPECT_NEAR(s.lr_at(35), 0.06 + 0.54 * (1 + std::cos(M_PI / 4)) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(s.lr_at(110), 0.06);
  EXPECT_DOUBLE_EQ(s.lr_at(500), 0.06);
  const LrSchedule early(schedule(LrScheduleType::kCosine, 0, /*decay_end=*/50));
  EXPECT_DOUBLE_EQ(early.lr_at(0), 0.6);
  EXPECT_NEAR(early.lr_at(25), 0.33, 1e-12);
  EXPECT_DOUBLE_EQ(early.lr_at(60), 0.06);
}

// The deck's cosine decay ends at train.steps unless optim.decay_steps says sooner.
TEST(LrSchedule, DeckDecayEndsAtTrainStepsUnlessDecayStepsSet) {
  OptimConfig optim;
  optim.schedule = LrScheduleType::kCosine;
  EXPECT_EQ(lr_schedule_spec(optim, /*steps=*/110).decay_end, 110);
  optim.decay_steps = 50;
  EXPECT_EQ(lr_schedule_spec(optim, /*steps=*/110).decay_end, 50);
}

TEST(LrSchedule, StepDecayAndConstant) {
  const LrSchedule step(schedule(LrScheduleType::kStep, 0));
  EXPECT_DOUBLE_EQ(step.lr_at(0), 0.6);
  EXPECT_DOUBLE_EQ(step.lr_at(29), 0.6);
  EXPECT_DOUBLE_EQ(step.lr_at(30), 0.3);
  EXPECT_DOUBLE_EQ(step.lr_at(95), 0.075);
  const LrSchedule constant(schedule(LrScheduleType::kConstant, 4));
  EXPECT_DOUBLE_EQ(constant.lr_at(1), 0.3);
  EXPECT_DOUBLE_EQ(constant.lr_at(150), 0.6);
}

// Two parameters: a matrix (decayed) and a bias (not decayed), with given gradients.
struct TwoParams {
  TwoParams() {
    torch::manual_seed(3);
    weight = torch::randn({3, 4}).requires_grad_(true);
    bias = torch::randn({4}).requires_grad_(true);
    weight.mutable_grad() = torch::randn({3, 4});
    bias.mutable_grad() = torch::randn({4});
    weight0 = weight.detach().clone();
    bias0 = bias.detach().clone();
  }
  std::vector<NamedTensor> named() { return {{"w", weight}, {"b", bias}}; }
  torch::Tensor weight, bias, weight0, bias0;
};

TEST(Optimizer, AdamWFirstStepMatchesTheFormulaAndSparesOneDimensionalParameters) {
  TwoParams p;
  OptimizerSpec c;
  c.type = OptimizerType::kAdamW;
  c.lr = 0.01;
  c.weight_decay = 0.1;
  c.eps = 1e-8;
  auto optimizer = make_optimizer(c, p.named());
  optimizer->step();
  // First step: m_hat = g, v_hat = g^2, so the update is lr x g / (|g| + eps); the decoupled
  // decay multiplies the weight (not the bias) by 1 - lr x wd first.
  auto adam = [&](const torch::Tensor& x0, const torch::Tensor& g, double wd) {
    return x0 * (1 - c.lr * wd) - c.lr * g / (g.abs() + c.eps);
  };
  EXPECT_TRUE(torch::allclose(p.weight, adam(p.weight0, p.weight.grad(), 0.1), 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(p.bias, adam(p.bias0, p.bias.grad(), 0.0), 1e-6, 1e-7));
}

TEST(Optimizer, NesterovSgdFirstTwoSteps) {
  TwoParams p;
  OptimizerSpec c;
  c.type = OptimizerType::kSgd;
  c.lr = 0.1;
  c.momentum = 0.9;
  c.nesterov = true;
  c.weight_decay = 0.0;
  auto optimizer = make_optimizer(c, p.named());
  optimizer->step();
  optimizer->step();  // same gradients again
  // Step 1: v = g, update g + mu v = 1.9 g. Step 2: v = mu g + g = 1.9 g, update g + mu v = 2.71 g.
  const torch::Tensor g = p.weight.grad();
  EXPECT_TRUE(torch::allclose(p.weight, p.weight0 - c.lr * (1.9 + 2.71) * g, 1e-6, 1e-7));
  set_learning_rate(*optimizer, 0.5);
  for (const auto& group : optimizer->param_groups()) {
    EXPECT_DOUBLE_EQ(group.options().get_lr(), 0.5);
  }
}

}  // namespace
}  // namespace ddpt

namespace ddpt {
namespace {

// What the banner says a rank will hold (from the deck) is what the optimizer holds after a step.
TEST(Optimizer, StateBytesMatchWhatTheBannerExpects) {
  for (const auto& [type, momentum, per_value] :
       {std::tuple{OptimizerType::kAdamW, 0.9, 8}, std::tuple{OptimizerType::kSgd, 0.9, 4},
        std::tuple{OptimizerType::kSgd, 0.0, 0}}) {
    TwoParams p;
    OptimizerSpec c;
    c.type = type;
    c.momentum = momentum;
    auto optimizer = make_optimizer(c, p.named());
    EXPECT_EQ(optimizer_state_bytes(*optimizer), 0) << "no state before the first step";
    optimizer->step();
    const int64_t values = 3 * 4 + 4;
    EXPECT_EQ(planned_optimizer_state_bytes(c, values), per_value * values) << choice_name(type);
    EXPECT_EQ(optimizer_state_bytes(*optimizer), planned_optimizer_state_bytes(c, values))
        << choice_name(type) << " momentum " << momentum;
  }
}

}  // namespace
}  // namespace ddpt
