// FusedAdamW (the optimizer training uses for optim.type = adamw on CPU float32) against
// LibTorch's torch::optim::AdamW: the same gradients for many steps, with a changing learning
// rate, two parameter groups and tensor sizes that leave vector tails; parameters and moments
// must agree within 1 ulp at every step, and a resume through export/import of the state must
// continue bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "optim/fused_adamw.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_state.hpp"

namespace ddpt {
namespace {

constexpr int kSteps = 300;

// Distance in units in the last place between two float32 tensors of one shape: the largest
// difference of their ordered bit patterns.
int64_t max_ulp_distance(const torch::Tensor& a, const torch::Tensor& b) {
  // NaNs of the same bits are 0 ulp apart: a NaN is a failure, not a distance.
  if (!torch::isfinite(a).all().item<bool>() || !torch::isfinite(b).all().item<bool>()) {
    ADD_FAILURE() << "a value that is not finite (NaN or infinity)";
    return std::numeric_limits<int64_t>::max();
  }
  auto ordered = [](const torch::Tensor& t) {
    const torch::Tensor bits = t.contiguous().view(torch::kInt).to(torch::kLong);
    // Negative floats sort backwards as integers: map them so the order is the floats' order.
    return torch::where(bits < 0, -(bits & 0x7fffffff), bits);
  };
  return (ordered(a) - ordered(b)).abs().max().item<int64_t>();
}

std::vector<NamedTensor> make_params(uint64_t seed) {
  torch::manual_seed(seed);
  // Sizes: vector tails (37, 100003 % 16), a matrix and a 1-D parameter (no weight decay).
  return {{"w", torch::randn({37, 29}).requires_grad_(true)},
          {"big", torch::randn({100003}).view({100003, 1}).requires_grad_(true)},
          {"b", torch::randn({37}).requires_grad_(true)}};
}

std::vector<NamedTensor> clone_params(const std::vector<NamedTensor>& params) {
  std::vector<NamedTensor> out;
  for (const auto& p : params)
    out.push_back({p.name, p.tensor.detach().clone().requires_grad_(true)});
  return out;
}

OptimizerSpec adamw_config() {
  OptimizerSpec c;
  c.type = OptimizerType::kAdamW;
  c.lr = 3e-3;
  c.beta1 = 0.9;
  c.beta2 = 0.95;
  c.eps = 1e-8;
  c.weight_decay = 0.1;
  return c;
}

std::unique_ptr<torch::optim::AdamW> libtorch_adamw(const OptimizerSpec& c,
                                                    const std::vector<NamedTensor>& params) {
  const auto options = torch::optim::AdamWOptions(c.lr)
                           .betas({c.beta1, c.beta2})
                           .eps(c.eps)
                           .weight_decay(c.weight_decay);
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> no_decay;
  for (const auto& p : params) (p.tensor.dim() >= 2 ? decay : no_decay).push_back(p.tensor);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) {
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options));
  }
  if (!no_decay.empty()) {
    auto no = std::make_unique<torch::optim::AdamWOptions>(options);
    no->weight_decay(0.0);
    groups.emplace_back(no_decay, std::move(no));
  }
  auto adamw = std::make_unique<torch::optim::AdamW>(std::move(groups), options);
  for (auto& group : adamw->param_groups()) {  // as make_optimizer does, for LibTorch >= 2.10
    static_cast<torch::optim::AdamWOptions&>(group.options())
        .weight_decay(group.params().front().dim() >= 2 ? c.weight_decay : 0.0);
  }
  return adamw;
}

// Same gradients for both parameter sets at step `step` (seeded by the step alone).
void set_gradients(int step, const std::vector<std::vector<NamedTensor>*>& sets) {
  torch::manual_seed(1000 + step);
  for (size_t i = 0; i < sets.front()->size(); ++i) {
    const torch::Tensor g = torch::randn_like((*sets.front())[i].tensor) * 0.1;
    for (auto* set : sets) (*set)[i].tensor.mutable_grad() = g.clone();
  }
}

double lr_at(int step) {
  return 3e-3 * (0.5 + 0.5 * std::cos(3.14159 * step / kSteps));
}

TEST(FusedAdamW, TrainingUsesIt) {
  std::vector<NamedTensor> params = make_params(1);
  const auto optimizer = make_optimizer(adamw_config(), params);
  EXPECT_NE(dynamic_cast<FusedAdamW*>(optimizer.get()), nullptr);
}

// Parameters it cannot fuse (here float64) are updated by LibTorch's own step, to the last bit.
TEST(FusedAdamW, OtherDtypesGoThroughLibTorchsStep) {
  torch::manual_seed(5);
  std::vector<NamedTensor> fused_params{
      {"w", torch::randn({5, 3}, torch::kDouble).requires_grad_(true)}};
  std::vector<NamedTensor> reference_params = clone_params(fused_params);
  const OptimizerSpec c = adamw_config();
  const auto fused = make_optimizer(c, fused_params);
  const auto reference = libtorch_adamw(c, reference_params);
  for (int step = 0; step < 5; ++step) {
    set_gradients(step, {&fused_params, &reference_params});
    fused->step();
    reference->step();
  }
  EXPECT_TRUE(torch::equal(fused_params[0].tensor, reference_params[0].tensor));
}

TEST(FusedAdamW, MatchesLibTorchAdamWWithinOneUlpAtEveryStep) {
  std::vector<NamedTensor> fused_params = make_params(2);
  std::vector<NamedTensor> reference_params = clone_params(fused_params);
  const OptimizerSpec c = adamw_config();
  const auto fused = make_optimizer(c, fused_params);
  const auto reference = libtorch_adamw(c, reference_params);
  int64_t worst = 0;
  for (int step = 0; step < kSteps; ++step) {
    set_gradients(step, {&fused_params, &reference_params});
    set_learning_rate(*fused, lr_at(step));
    set_learning_rate(*reference, lr_at(step));
    fused->step();
    reference->step();
    const auto fused_state = export_optimizer_state(*fused, fused_params);
    const auto reference_state = export_optimizer_state(*reference, reference_params);
    ASSERT_EQ(fused_state.size(), reference_state.size());
    for (size_t i = 0; i < fused_params.size(); ++i) {
      const int64_t d = max_ulp_distance(fused_params[i].tensor, reference_params[i].tensor);
      worst = std::max(worst, d);
      ASSERT_LE(d, 1) << fused_params[i].name << " at step " << step + 1;
    }
    for (size_t i = 0; i < fused_state.size(); ++i) {
      if (fused_state[i].tensor.scalar_type() != torch::kFloat) {  // the step count
        ASSERT_TRUE(torch::equal(fused_state[i].tensor, reference_state[i].tensor));
        continue;
      }
      const int64_t d = max_ulp_distance(fused_state[i].tensor, reference_state[i].tensor);
      worst = std::max(worst, d);
      ASSERT_LE(d, 1) << fused_state[i].name << " at step " << step + 1;
    }
  }
  std::printf("largest difference over %d steps: %lld ulp\n", kSteps,
              static_cast<long long>(worst));
}

TEST(FusedAdamW, ResumesBitForBitFromItsSavedState) {
  const OptimizerSpec c = adamw_config();
  std::vector<NamedTensor> straight = make_params(3);
  std::vector<NamedTensor> first_half = clone_params(straight);
  const auto uninterrupted = make_optimizer(c, straight);
  const auto before = make_optimizer(c, first_half);
  constexpr int kHalf = 40;
  for (int step = 0; step < kHalf; ++step) {
    set_gradients(step, {&straight, &first_half});
    uninterrupted->step();
    before->step();
  }
  // What a checkpoint keeps: the parameters and the exported state, copied into fresh tensors.
  std::vector<NamedTensor> resumed = clone_params(first_half);
  const auto after = make_optimizer(c, resumed);
  const std::vector<NamedTensor> saved = export_optimizer_state(*before, first_half);
  import_optimizer_state(*after, resumed, [&](const std::string& name) {
    for (const auto& t : saved) {
      if (t.name == name) return t.tensor.clone();
    }
    return torch::Tensor();
  });
  for (int step = kHalf; step < 2 * kHalf; ++step) {
    set_gradients(step, {&straight, &resumed});
    uninterrupted->step();
    after->step();
  }
  for (size_t i = 0; i < straight.size(); ++i) {
    EXPECT_TRUE(torch::equal(straight[i].tensor, resumed[i].tensor)) << straight[i].name;
  }
  const auto a = export_optimizer_state(*uninterrupted, straight);
  const auto b = export_optimizer_state(*after, resumed);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::equal(a[i].tensor, b[i].tensor)) << a[i].name;
}

TEST(Optimizer, SgdSparesOneDimensionalParametersFromWeightDecay) {
  torch::manual_seed(4);
  std::vector<NamedTensor> params{{"w", torch::randn({3, 4}).requires_grad_(true)},
                                  {"b", torch::randn({4}).requires_grad_(true)}};
  for (auto& p : params) p.tensor.mutable_grad() = torch::randn_like(p.tensor);
  const torch::Tensor w0 = params[0].tensor.detach().clone();
  const torch::Tensor b0 = params[1].tensor.detach().clone();
  OptimizerSpec c;
  c.type = OptimizerType::kSgd;
  c.lr = 0.1;
  c.momentum = 0.0;
  c.weight_decay = 0.5;
  const auto sgd = make_optimizer(c, params);
  for (const auto& group : sgd->param_groups()) {
    const double wd = static_cast<const torch::optim::SGDOptions&>(group.options()).weight_decay();
    EXPECT_EQ(wd, group.params().front().dim() >= 2 ? 0.5 : 0.0);
  }
  sgd->step();
  EXPECT_TRUE(torch::allclose(params[0].tensor, w0 - c.lr * (params[0].tensor.grad() + 0.5 * w0)));
  EXPECT_TRUE(torch::allclose(params[1].tensor, b0 - c.lr * params[1].tensor.grad()));
}

}  // namespace
}  // namespace ddpt
