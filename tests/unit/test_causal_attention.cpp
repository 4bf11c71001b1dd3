// The fused CPU causal attention against the tensor-op reference evaluated in float64: outputs
// and the gradient of qkv, for one row block (T <= 64) and for several (T > 64, where the kernel
// skips the masked columns of the earlier rows).
#include <gtest/gtest.h>

#include "models/causal_attention.hpp"
#include "support/relative_error.hpp"

namespace ddpt {
namespace {

struct AttentionCase {
  int64_t batch, time, n_head, head_dim;
};

using ddpt::testing::relative_error;

void expect_fused_matches_reference(const AttentionCase& c) {
  torch::manual_seed(7);
  const int64_t width = c.n_head * c.head_dim;
  // Scores of order 1 to 10, so the softmax is neither uniform nor one-hot.
  const torch::Tensor qkv = 2 * torch::randn({c.batch, c.time, 3 * width});
  const torch::Tensor upstream = torch::randn({c.batch, c.time, width});

  const torch::Tensor fused_in = qkv.clone().requires_grad_(true);
  const torch::Tensor fused = fused_causal_self_attention(fused_in, c.n_head);
  fused.backward(upstream);

  const torch::Tensor exact_in = qkv.to(torch::kDouble).requires_grad_(true);
  const torch::Tensor exact = reference_causal_self_attention(exact_in, c.n_head, 0.0, true);
  exact.backward(upstream.to(torch::kDouble));

  ASSERT_EQ(fused.sizes(), exact.sizes());
  EXPECT_EQ(fused.scalar_type(), torch::kFloat);
  EXPECT_LT(relative_error(fused, exact), 1e-5) << "output, T = " << c.time;
  EXPECT_LT(relative_error(fused_in.grad(), exact_in.grad()), 1e-5) << "d qkv, T = " << c.time;
  // The float32 reference, as the model ran before the fused kernel, is as far from float64.
  const torch::Tensor before = reference_causal_self_attention(qkv, c.n_head, 0.0, true);
  EXPECT_LT(relative_error(before, exact), 1e-5);
}

TEST(CausalAttention, FusedMatchesTheReferenceInOneRowBlock) {
  if (!fused_causal_attention_available(torch::zeros({1})))
    GTEST_SKIP() << "built without a CPU GEMM";
  expect_fused_matches_reference({3, 9, 3, 8});
  expect_fused_matches_reference({2, 64, 4, 32});
  expect_fused_matches_reference({1, 1, 2, 4});
}

TEST(CausalAttention, FusedMatchesTheReferenceOverSeveralRowBlocks) {
  if (!fused_causal_attention_available(torch::zeros({1})))
    GTEST_SKIP() << "built without a CPU GEMM";
  expect_fused_matches_reference({2, 65, 2, 16});
  expect_fused_matches_reference({1, 150, 4, 8});
}

// The GPT's CPU numbers are the same on LibTorch 1.x and 2.x: on 2.x too, float32 on a CPU
// without attention dropout goes to the fused kernel, not to scaled_dot_product_attention.
TEST(CausalAttention, Float32OnACpuTakesTheFusedKernelOnEveryLibTorch) {
  if (!fused_causal_attention_available(torch::zeros({1})))
    GTEST_SKIP() << "built without a CPU GEMM";
  torch::manual_seed(3);
  const torch::Tensor qkv = 2 * torch::randn({2, 70, 3 * 32});
  const torch::Tensor fused = fused_causal_self_attention(qkv, 4);
  EXPECT_TRUE(torch::equal(causal_self_attention(qkv, 4, 0.0, true), fused));
  EXPECT_TRUE(torch::equal(causal_self_attention(qkv, 4, 0.1, false), fused));  // eval: no dropout
}

TEST(CausalAttention, ReferenceIsUsedWhereTheFusedKernelIsNot) {
  const torch::Tensor qkv = torch::randn({2, 5, 3 * 8}, torch::kDouble);
  EXPECT_FALSE(fused_causal_attention_available(qkv));
  const torch::Tensor y = causal_self_attention(qkv, 2, 0.0, true);
  EXPECT_TRUE(torch::allclose(y, reference_causal_self_attention(qkv, 2, 0.0, true)));
  EXPECT_THROW(fused_causal_self_attention(qkv, 2), c10::Error);
}

TEST(CausalAttention, RefusesAPackedWidthThatDoesNotSplitIntoHeads) {
  EXPECT_THROW(causal_self_attention(torch::randn({1, 4, 10}), 4, 0.0, false), c10::Error);
}

}  // namespace
}  // namespace ddpt
