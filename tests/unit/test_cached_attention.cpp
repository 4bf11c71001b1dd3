// One new position's attention over cached keys and values (models/cached_attention.hpp) against
// the tensor operations it stands in for: views into a cache of more slots than are filled, the
// bias broadcast or per (row, head), hidden positions, head widths that are and are not a multiple
// of its 8 lanes.
#include <gtest/gtest.h>

#include <limits>

#include "models/cached_attention.hpp"

namespace ddpt {
namespace {

torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& keys,
                        const torch::Tensor& values, const torch::Tensor& bias, float scale) {
  const int64_t rows = q.size(0), heads = q.size(1), dim = q.size(2), length = keys.size(2);
  const torch::Tensor full = (bias.size(2) == 1 ? bias : bias.narrow(2, 0, length))
                                 .expand({rows * heads, 1, length})
                                 .reshape({rows, heads, length});
  const torch::Tensor scores =
      torch::matmul(q.unsqueeze(2), keys.transpose(2, 3)).squeeze(2) * scale + full;  // [N, h, L]
  return torch::matmul(torch::softmax(scores, -1).unsqueeze(2), values)
      .squeeze(2)
      .reshape({rows, heads * dim});
}

TEST(CachedAttention, MatchesTensorOperations) {
  torch::manual_seed(4);
  for (const int64_t dim : {16, 12}) {
    const int64_t rows = 3, heads = 2, capacity = 11, length = 7;
    // The cache's layout: [2, rows, heads, capacity, dim], the first `length` slots filled.
    const torch::Tensor cache = torch::randn({2, rows, heads, capacity, dim});
    const torch::Tensor keys = cache.select(0, 0).narrow(2, 0, length);
    const torch::Tensor values = cache.select(0, 1).narrow(2, 0, length);
    // q as the decoder takes it out of qkv [N, 3, heads, dim].
    const torch::Tensor q = torch::randn({rows, 3, heads, dim}).select(1, 0);
    const float scale = 0.3f;
    const torch::Tensor none = torch::zeros({1, 1, 1});
    torch::Tensor hidden = torch::zeros({rows * heads, 1, capacity});
    hidden.narrow(2, 0, 2).select(0, 1).fill_(-std::numeric_limits<float>::infinity());
    hidden.narrow(2, 0, 4).select(0, 4).fill_(-std::numeric_limits<float>::infinity());
    for (const torch::Tensor& bias : {none, hidden}) {
      const torch::Tensor got = cached_attention(q, keys, values, bias, scale);
      const torch::Tensor expected = reference(q, keys, values, bias, scale);
      ASSERT_EQ(got.sizes(), expected.sizes());
      EXPECT_TRUE(torch::allclose(got, expected, 1e-5, 1e-6))
          << "head width " << dim << ", largest difference "
          << (got - expected).abs().max().item<float>();
    }
  }
}

}  // namespace
}  // namespace ddpt
