// ddptrain's linear layer (models/linear.hpp) against the same product evaluated in float64: the
// output and the gradients of input, weight and bias, for the shapes the built-in models use and
// the odd ones (3-D input, no bias, a transposed input, empty batches, frozen weights); and the
// cases that must go through LibTorch's linear instead; and the weight's gradient written straight
// into .grad where a GradientsInPlace scope hands it over (util/gradients_in_place.hpp), and
// only there.
#include <gtest/gtest.h>

#include <optional>

#include "models/autocast.hpp"
#include "models/cpu_gemm.hpp"
#include "models/linear.hpp"
#include "support/autograd_hooks.hpp"
#include "support/relative_error.hpp"
#include "util/gradients_in_place.hpp"

namespace ddpt {
namespace {

using ddpt::testing::PostHookRuns;
using ddpt::testing::ReceivedGradient;
using ddpt::testing::relative_error;

struct Grads {
  torch::Tensor y, dx, dw, db;
};

Grads run(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
          const torch::Tensor& upstream, bool ours) {
  const torch::Tensor x = x0.clone().requires_grad_(true);
  const torch::Tensor w = w0.clone().requires_grad_(true);
  const torch::Tensor b = b0.defined() ? b0.clone().requires_grad_(true) : torch::Tensor();
  const torch::Tensor y = ours ? ddpt::linear(x, w, b) : torch::nn::functional::linear(x, w, b);
  y.backward(upstream);
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

void expect_matches_float64(const std::vector<int64_t>& x_shape, int64_t out, bool bias) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn(x_shape);
  const torch::Tensor w = torch::randn({out, x_shape.back()}) / std::sqrt(x_shape.back());
  const torch::Tensor b = bias ? torch::randn({out}) : torch::Tensor();
  std::vector<int64_t> y_shape = x_shape;
  y_shape.back() = out;
  const torch::Tensor upstream = torch::randn(y_shape);

  ASSERT_TRUE(linear_uses_cpu_gemm(x, w, b));
  const Grads got = run(x, w, b, upstream, true);
  const Grads exact =
      run(x.to(torch::kDouble), w.to(torch::kDouble), bias ? b.to(torch::kDouble) : torch::Tensor(),
          upstream.to(torch::kDouble), false);
  const std::string where = c10::str("x ", x.sizes(), ", out ", out, ", bias ", bias);
  ASSERT_EQ(got.y.sizes(), exact.y.sizes()) << where;
  EXPECT_EQ(got.y.scalar_type(), torch::kFloat);
  EXPECT_LT(relative_error(got.y, exact.y), 1e-5) << "y, " << where;
  EXPECT_LT(relative_error(got.dx, exact.dx), 1e-5) << "dx, " << where;
  EXPECT_LT(relative_error(got.dw, exact.dw), 1e-5) << "dw, " << where;
  if (bias) EXPECT_LT(relative_error(got.db, exact.db), 1e-5) << "db, " << where;
}

TEST(Linear, MatchesFloat64OnTheModelsShapes) {
  if (!cpu_gemm_available()) GTEST_SKIP() << "built without a CPU GEMM: linear() is LibTorch's";
  expect_matches_float64({1024, 128}, 384, true);  // the GPT's c_attn at gpt_ddp.sh's size
  expect_matches_float64({1024, 512}, 128, true);  // its MLP projection
  expect_matches_float64({64, 256}, 1024, true);   // the scaling MLP's first layer
  expect_matches_float64({4, 16, 32}, 20, false);  // [N, T, C] input, the tied head
  expect_matches_float64({7}, 5, true);            // one sample, no batch dimension
  expect_matches_float64({3, 1}, 1, true);
}

// One row: the bias broadcast to [1, out] is the bias itself, contiguous; the product must start
// from a copy of it, not write into the parameter (a 1-row forward, as predict's last batch can
// be, once left the output in the bias).
TEST(Linear, OneRowLeavesTheBiasAlone) {
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({7, 5});
  const torch::Tensor b = torch::randn({7});
  const torch::Tensor before = b.clone();
  const torch::Tensor y = ddpt::linear(torch::randn({1, 5}), w, b);
  EXPECT_TRUE(torch::equal(b, before)) << "the bias was written";
  EXPECT_NE(y.data_ptr(), b.data_ptr()) << "the output is the bias's memory";
}

TEST(Linear, TransposedInputAndFrozenWeight) {
  if (!cpu_gemm_available()) GTEST_SKIP() << "built without a CPU GEMM: linear() is LibTorch's";
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({24, 40}).t();  // [40, 24], not contiguous
  const torch::Tensor w = torch::randn({8, 24});
  const torch::Tensor b = torch::randn({8});
  const torch::Tensor input = x.clone().requires_grad_(true);  // clone keeps the strides
  ASSERT_FALSE(input.is_contiguous());
  const torch::Tensor y = ddpt::linear(input, w, b);  // weight and bias need no gradient
  y.sum().backward();
  const torch::Tensor exact = torch::nn::functional::linear(
      x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble));
  EXPECT_LT(relative_error(y, exact), 1e-5);
  EXPECT_LT(relative_error(input.grad(), w.to(torch::kDouble).sum(0).expand({40, 24})), 1e-5);
  EXPECT_FALSE(w.grad().defined());
}

TEST(Linear, EmptyBatchesAndEmptyInputs) {
  if (!cpu_gemm_available()) GTEST_SKIP() << "built without a CPU GEMM: linear() is LibTorch's";
  const torch::Tensor w = torch::randn({3, 4}).requires_grad_(true);
  const torch::Tensor b = torch::randn({3}).requires_grad_(true);
  const torch::Tensor none = torch::randn({0, 4}).requires_grad_(true);
  const torch::Tensor y = ddpt::linear(none, w, b);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{0, 3}));
  y.sum().backward();
  EXPECT_TRUE(w.grad().eq(0).all().item<bool>());  // no rows: zero gradients, not garbage
  EXPECT_TRUE(b.grad().eq(0).all().item<bool>());
  // in = 0: y is the bias alone.
  const torch::Tensor w0 = torch::randn({3, 0});
  EXPECT_TRUE(ddpt::linear(torch::randn({2, 0}), w0, b.detach()).eq(b.detach()).all().item<bool>());
  EXPECT_TRUE(ddpt::linear(torch::randn({2, 0}), w0).eq(0).all().item<bool>());
}

// Without gradients (evaluation, generation) the product skips the autograd function: the same
// values bit for bit as with gradients, for a 3-D and a transposed input, no bias, one row (whose
// bias must still be left alone), under no_grad and under inference mode.
TEST(Linear, WithoutGradientsTheSameProduct) {
  if (!cpu_gemm_available()) GTEST_SKIP() << "built without a CPU GEMM: linear() is LibTorch's";
  torch::manual_seed(9);
  const torch::Tensor w = torch::randn({12, 10}).requires_grad_(true);
  const torch::Tensor b = torch::randn({12}).requires_grad_(true);
  const torch::Tensor bias_before = b.detach().clone();
  const std::vector<torch::Tensor> inputs = {torch::randn({6, 10}), torch::randn({2, 3, 10}),
                                             torch::randn({10, 6}).t(), torch::randn({1, 10})};
  for (const torch::Tensor& x : inputs) {
    for (const bool with_bias : {true, false}) {
      const torch::Tensor bias = with_bias ? b : torch::Tensor();
      const torch::Tensor graded = ddpt::linear(x, w, bias).detach();
      torch::Tensor no_grad_y, inference_y;
      {
        const torch::NoGradGuard no_grad;
        no_grad_y = ddpt::linear(x, w, bias);
      }
      {
        const c10::InferenceMode inference;
        inference_y = ddpt::linear(x, w, bias);
      }
      const std::string where = c10::str("x ", x.sizes(), ", bias ", with_bias);
      EXPECT_FALSE(no_grad_y.requires_grad()) << where;
      EXPECT_TRUE(torch::equal(no_grad_y, graded)) << "no_grad, " << where;
      EXPECT_TRUE(torch::equal(inference_y, graded)) << "inference mode, " << where;
    }
  }
  EXPECT_TRUE(torch::equal(b.detach(), bias_before)) << "the bias was written";
}

// Slots that hand over one tensor, once (as the reducer hands over a slot that holds nothing yet).
class OneSlot final : public GradientSlots {
 public:
  explicit OneSlot(torch::Tensor slot) : slot_(std::move(slot)) {}
  bool claim_for_overwrite(const torch::Tensor& grad) override {
    ++asked_;
    if (!grad.is_same(slot_) || claimed_) return false;
    claimed_ = true;
    return true;
  }
  int asked() const { return asked_; }

 private:
  torch::Tensor slot_;
  bool claimed_ = false;
  int asked_ = 0;
};

TEST(Linear, WeightGradientIsWrittenIntoAClaimedGradOnly) {
  if (!cpu_gemm_available()) GTEST_SKIP() << "built without a CPU GEMM: linear() is LibTorch's";
  torch::manual_seed(13);
  const torch::Tensor x = torch::randn({32, 48});
  const torch::Tensor w0 = torch::randn({16, 48});
  const torch::Tensor b0 = torch::randn({16});
  const torch::Tensor upstream = torch::randn({32, 16});
  const torch::Tensor earlier = torch::randn({16, 48});  // what .grad held before
  const torch::Tensor earlier_b = torch::randn({16});
  const torch::Tensor dw = upstream.to(torch::kDouble).t().mm(x.to(torch::kDouble));
  const torch::Tensor db = upstream.to(torch::kDouble).sum(0);

  enum class Scope { kClaims, kRefuses, kNone };
  for (const Scope scope : {Scope::kClaims, Scope::kRefuses, Scope::kNone}) {
    const std::string where = scope == Scope::kClaims    ? "slot claimed"
                              : scope == Scope::kRefuses ? "slot refused"
                                                         : "no scope";
    const torch::Tensor w = w0.clone().requires_grad_(true);
    const torch::Tensor b = b0.clone().requires_grad_(true);
    const torch::Tensor grad = earlier.clone();
    w.mutable_grad() = grad;
    b.mutable_grad() = earlier_b.clone();
    // Held here: the leaf keeps only a weak reference to its accumulator.
    const auto accumulator = torch::autograd::impl::grad_accumulator(w);
    int received = -1;
    accumulator->add_pre_hook(std::make_unique<ReceivedGradient>(&received));
    int post_hook_runs = 0;
    accumulator->add_post_hook(std::make_unique<PostHookRuns>(&post_hook_runs));
    OneSlot slots(scope == Scope::kClaims ? grad : torch::Tensor());
    {
      std::optional<GradientsInPlace> in_place;
      if (scope != Scope::kNone) in_place.emplace(slots);
      ddpt::linear(x, w, b).backward(upstream);
    }
    EXPECT_EQ(slots.asked(), scope == Scope::kNone ? 0 : 1) << where;
    EXPECT_EQ(received, scope == Scope::kClaims ? 0 : 1) << where;  // nothing left to add
    EXPECT_EQ(post_hook_runs, 1) << where;                          // the reducer's hook runs
    EXPECT_TRUE(w.grad().is_same(grad)) << where;
    const torch::Tensor expected = scope == Scope::kClaims ? dw : earlier.to(torch::kDouble) + dw;
    EXPECT_LT(relative_error(w.grad(), expected), 1e-5) << where;
    EXPECT_LT(relative_error(b.grad(), earlier_b.to(torch::kDouble) + db), 1e-5) << where;
  }

  // autograd::grad() opens no scope: it returns the gradient and leaves .grad alone.
  const torch::Tensor v = w0.clone().requires_grad_(true);
  v.mutable_grad() = earlier.clone();
  const auto grads = torch::autograd::grad({ddpt::linear(x, v, b0)}, {v}, {upstream});
  EXPECT_LT(relative_error(grads.at(0), dw), 1e-5);
  EXPECT_TRUE(v.grad().equal(earlier));
}

TEST(Linear, OtherDtypesAndAutocastAreLibTorchs) {
  const torch::Tensor x = torch::randn({6, 5}, torch::kDouble);
  const torch::Tensor w = torch::randn({2, 5}, torch::kDouble);
  EXPECT_FALSE(linear_uses_cpu_gemm(x, w, {}));
  EXPECT_TRUE(ddpt::linear(x, w).equal(torch::nn::functional::linear(x, w)));
  const torch::Tensor xf = x.to(torch::kFloat), wf = w.to(torch::kFloat);
  {
    AutocastScope bf16(Precision::kBf16, torch::kCPU);
    EXPECT_FALSE(linear_uses_cpu_gemm(xf, wf, {}));
    EXPECT_EQ(ddpt::linear(xf, wf).scalar_type(), torch::kBFloat16);  // as LibTorch's linear gives
  }
  EXPECT_EQ(linear_uses_cpu_gemm(xf, wf, {}), cpu_gemm_available());
}

TEST(Linear, ModuleHasTorchsParametersAndInitialisation) {
  torch::manual_seed(11);
  Linear ours(torch::nn::LinearOptions(6, 4));
  torch::manual_seed(11);
  torch::nn::Linear theirs(torch::nn::LinearOptions(6, 4));
  const auto a = ours->named_parameters(), b = theirs->named_parameters();
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& key : a.keys()) EXPECT_TRUE(a[key].equal(b[key])) << key;
  const torch::Tensor x = torch::randn({5, 6});
  EXPECT_LT(relative_error(ours->forward(x), theirs->forward(x).to(torch::kDouble)), 1e-6);
}

}  // namespace
}  // namespace ddpt
