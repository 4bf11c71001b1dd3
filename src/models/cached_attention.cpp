#include "models/cached_attention.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ddpt {
namespace {

// a . b over `size` floats, in kLanes independent sums so that the compiler may vectorise it
// (a float sum in one accumulator may not be reordered).
constexpr int64_t kLanes = 8;

float dot(const float* a, const float* b, int64_t size) {
  float lanes[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= size; d += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += a[d + l] * b[d + l];
  }
  float sum = 0;
  for (; d < size; ++d) sum += a[d] * b[d];
  for (const float lane : lanes) sum += lane;
  return sum;
}

}  // namespace

bool cached_attention_available(const torch::Tensor& q) {
  return q.device().is_cpu() && q.scalar_type() == torch::kFloat;
}

torch::Tensor cached_attention(const torch::Tensor& q, const torch::Tensor& keys,
                               const torch::Tensor& values, const torch::Tensor& bias,
                               float scale) {
  TORCH_CHECK(q.dim() == 3 && keys.dim() == 4 && values.sizes() == keys.sizes() &&
                  keys.size(0) == q.size(0) && keys.size(1) == q.size(1) &&
                  keys.size(3) == q.size(2) && q.stride(2) == 1 && keys.stride(3) == 1 &&
                  values.stride(3) == 1,
              "cached attention: q [N, heads, head_dim], keys and values [N, heads, L, head_dim] "
              "with contiguous rows, got ",
              q.sizes(), ", ", keys.sizes(), ", ", values.sizes());
  const int64_t rows = q.size(0), heads = q.size(1), head_dim = q.size(2), length = keys.size(2);
  TORCH_CHECK(bias.dim() == 3 && (bias.size(0) == 1 || bias.size(0) == rows * heads) &&
                  (bias.size(2) == 1 || bias.size(2) >= length) &&
                  bias.scalar_type() == torch::kFloat,
              "cached attention: bias must be float [N heads or 1, 1, L or 1], got ", bias.sizes());
  torch::Tensor y = torch::empty({rows, heads * head_dim}, q.options());
  const float* q_data = q.data_ptr<float>();
  const float* k_data = keys.data_ptr<float>();
  const float* v_data = values.data_ptr<float>();
  const float* b_data = bias.data_ptr<float>();
  float* y_data = y.data_ptr<float>();
  // Broadcast dimensions of the bias step by 0.
  const int64_t b_pair = bias.size(0) == 1 ? 0 : bias.stride(0);
  const int64_t b_position = bias.size(2) == 1 ? 0 : bias.stride(2);
  at::parallel_for(0, rows * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> weights(static_cast<size_t>(length));
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t n = pair / heads, h = pair % heads;
      const float* query = q_data + n * q.stride(0) + h * q.stride(1);
      const float* key = k_data + n * keys.stride(0) + h * keys.stride(1);
      const float* value = v_data + n * values.stride(0) + h * values.stride(1);
      const float* hidden = b_data + pair * b_pair;
      float most = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < length; ++j) {
        const float score =
            scale * dot(query, key + j * keys.stride(2), head_dim) + hidden[j * b_position];
        weights[static_cast<size_t>(j)] = score;
        most = std::max(most, score);
      }
      float sum = 0;
      for (float& w : weights) {
        w = std::exp(w - most);
        sum += w;
      }
      float* out = y_data + n * heads * head_dim + h * head_dim;
      std::fill(out, out + head_dim, 0.0f);
      for (int64_t j = 0; j < length; ++j) {
        const float w = weights[static_cast<size_t>(j)] / sum;
        const float* v = value + j * values.stride(2);
        for (int64_t d = 0; d < head_dim; ++d) out[d] += w * v[d];
      }
    }
  });
  return y;
}

}  // namespace ddpt
