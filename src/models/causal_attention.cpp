#include "models/causal_attention.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "models/cpu_gemm.hpp"
#include "util/versions.hpp"

namespace ddpt {
namespace {

// Rows of scores handled at once. Row block [i0, i0 + R) needs key columns [0, i0 + R) only, so
// long contexts skip most of the masked upper triangle; at T <= R it is one full T x T block.
constexpr int64_t kRowBlock = 64;

// exp(v) for v <= 0 (softmax subtracts the row's maximum first): Cephes' expf (relative error
// below 2e-7, as LibTorch's vectorised exp), written without calls or branches so that GCC
// vectorises the loop below (libm's expf is a scalar call). v is clamped to [-87.34, 0]: below,
// exp is smaller than the smallest normal float and this returns about 1e-38; above, 2^whole
// could overflow (the masked scores that exp_shifted runs over for whole vectors may exceed the
// row's maximum; their results are discarded).
inline float exp_of(float v) {
  v = v < -87.33654f ? -87.33654f : v;
  v = v > 0.0f ? 0.0f : v;
  const float whole = __builtin_floorf(v * 1.44269504088896341f + 0.5f);  // round(v / ln 2)
  float r = v - whole * 0.693359375f;  // v - whole ln 2, ln 2 split in two for precision
  r = r + whole * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(whole) + 127) << 23;  // 2^whole
  float two_to_whole;
  std::memcpy(&two_to_whole, &bits, sizeof bits);
  return p * two_to_whole;
}

// x[j] = exp(x[j] - shift) for j < n, compiled for AVX2 and for the baseline, picked at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void exp_shifted(float* __restrict x, int64_t n, float shift) {
  for (int64_t j = 0; j < n; ++j) x[j] = exp_of(x[j] - shift);
}

// Sum with eight running partial sums, so that the loop is not one long chain of dependent adds.
float sum(const float* x, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) part[l] += x[j + l];
  }
  float total = 0;
  for (; j < n; ++j) total += x[j];
  for (float p : part) total += p;
  return total;
}

float dot(const float* x, const float* y, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) part[l] += x[j + l] * y[j + l];
  }
  float total = 0;
  for (; j < n; ++j) total += x[j] * y[j];
  for (float p : part) total += p;
  return total;
}

// Softmax of row[0, valid) in place (the positions this query may see); row[valid, width) = 0.
// row[0, computed) holds scores (computed >= valid); the rest is not initialised.
void causal_softmax_row(float* row, int64_t valid, int64_t computed, int64_t width) {
  float max = row[0];
  for (int64_t j = 1; j < valid; ++j) max = row[j] > max ? row[j] : max;
  // A NaN score leaves max finite and is carried by exp and the sum into the whole row. The exp
  // runs on whole vectors of computed scores past `valid` (zeroed below): less scalar tail.
  exp_shifted(row, std::min(computed, (valid + 7) / 8 * 8), max);
  const float inverse = 1.0f / sum(row, valid);
  for (int64_t j = 0; j < valid; ++j) row[j] *= inverse;
  std::fill(row + valid, row + width, 0.0f);
}

// Shapes and strides of one call: qkv [N, T, 3C] row-major, heads of head_dim columns.
struct Layout {
  int64_t batch, time, width, heads, head_dim;
  int64_t qkv_row() const { return 3 * width; }
  // q, k and v of (sample n, head h) start here, each a [T, head_dim] matrix with rows qkv_row()
  // apart; k and v are width and 2 width further on.
  int64_t qkv_offset(int64_t n, int64_t h) const { return n * time * qkv_row() + h * head_dim; }
  // y and dy of (n, h): [T, head_dim] with rows width apart.
  int64_t y_offset(int64_t n, int64_t h) const { return n * time * width + h * head_dim; }
  // Scores are q.k / sqrt(head_dim).
  float score_scale() const {
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  }
};

Layout layout_of(const torch::Tensor& qkv, int64_t n_head) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % (3 * n_head) == 0,
              "causal attention: qkv must be [N, T, 3 C] with C a multiple of n_head = ", n_head,
              ", got ", qkv.sizes());
  const int64_t width = qkv.size(2) / 3;
  return {qkv.size(0), qkv.size(1), width, n_head, width / n_head};
}

// The tensor-op views: q, k, v each [N, heads, T, head_dim] out of qkv [N, T, 3C].
std::array<torch::Tensor, 3> split_heads(const torch::Tensor& qkv, const Layout& s) {
  const std::vector<torch::Tensor> parts = qkv.split(s.width, 2);
  std::array<torch::Tensor, 3> out;
  for (size_t i = 0; i < 3; ++i) {
    out[i] = parts[i].view({s.batch, s.time, s.heads, s.head_dim}).transpose(1, 2);
  }
  return out;
}

// [N, heads, T, head_dim] back to [N, T, C], heads side by side.
torch::Tensor merge_heads(const torch::Tensor& y, const Layout& s) {
  return y.transpose(1, 2).contiguous().view({s.batch, s.time, s.width});
}

// Forward: y [N, T, C] and the attention weights [N, heads, T, T] (zero above the diagonal) that
// the backward pass needs.
// qkv must be contiguous.
std::pair<torch::Tensor, torch::Tensor> fused_forward(const torch::Tensor& qkv, int64_t n_head) {
  const Layout s = layout_of(qkv, n_head);
  torch::Tensor y = torch::empty({s.batch, s.time, s.width}, qkv.options());
  torch::Tensor weights = torch::empty({s.batch, s.heads, s.time, s.time}, qkv.options());
  const float scale = s.score_scale();
  const float* qkv_data = qkv.data_ptr<float>();
  float* y_data = y.data_ptr<float>();
  float* weight_data = weights.data_ptr<float>();
  const int64_t T = s.time, D = s.head_dim, ld = s.qkv_row();
  at::parallel_for(0, s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nh = begin; nh < end; ++nh) {
      const int64_t n = nh / s.heads, h = nh % s.heads;
      const float* q = qkv_data + s.qkv_offset(n, h);
      const float* k = q + s.width;
      const float* v = q + 2 * s.width;
      float* p = weight_data + nh * T * T;
      float* out = y_data + s.y_offset(n, h);
      for (int64_t i0 = 0; i0 < T; i0 += kRowBlock) {
        const int64_t rows = std::min(kRowBlock, T - i0), cols = i0 + rows;
        float* p_rows = p + i0 * T;
        cpu_sgemm(false, true, rows, cols, D, scale, q + i0 * ld, ld, k, ld, 0.0f, p_rows, T);
        for (int64_t r = 0; r < rows; ++r) {
          causal_softmax_row(p_rows + r * T, i0 + r + 1, cols, T);
        }
        cpu_sgemm(false, false, rows, D, cols, 1.0f, p_rows, T, v, ld, 0.0f, out + i0 * s.width,
                  s.width);
      }
    }
  });
  return {y, weights};
}

// Backward: d qkv from dy and the forward's weights P. Per (n, h) and row block:
//   dP = dY V^T,  dS = P * (dP - rowsum(P * dP)) / sqrt(head_dim)   (softmax and scale),
//   dQ = dS K,  dK += dS^T Q,  dV += P^T dY.
torch::Tensor fused_backward(const torch::Tensor& dy_in, const torch::Tensor& qkv,
                             const torch::Tensor& weights, int64_t n_head) {
  const torch::Tensor dy = dy_in.contiguous();
  const Layout s = layout_of(qkv, n_head);
  torch::Tensor dqkv = torch::zeros_like(qkv);  // dK and dV accumulate over row blocks
  const float scale = s.score_scale();
  const float* qkv_data = qkv.data_ptr<float>();
  const float* dy_data = dy.data_ptr<float>();
  const float* weight_data = weights.data_ptr<float>();
  float* dqkv_data = dqkv.data_ptr<float>();
  const int64_t T = s.time, D = s.head_dim, ld = s.qkv_row();
  at::parallel_for(0, s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> ds(static_cast<size_t>(std::min(kRowBlock, T) * T));
    for (int64_t nh = begin; nh < end; ++nh) {
      const int64_t n = nh / s.heads, h = nh % s.heads;
      const float* q = qkv_data + s.qkv_offset(n, h);
      const float* k = q + s.width;
      const float* v = q + 2 * s.width;
      float* dq = dqkv_data + s.qkv_offset(n, h);
      float* dk = dq + s.width;
      float* dv = dq + 2 * s.width;
      const float* p = weight_data + nh * T * T;
      const float* dout = dy_data + s.y_offset(n, h);
      for (int64_t i0 = 0; i0 < T; i0 += kRowBlock) {
        const int64_t rows = std::min(kRowBlock, T - i0), cols = i0 + rows;
        const float* p_rows = p + i0 * T;
        const float* dout_rows = dout + i0 * s.width;
        cpu_sgemm(false, true, rows, cols, D, 1.0f, dout_rows, s.width, v, ld, 0.0f, ds.data(),
                  cols);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t valid = i0 + r + 1;
          const float* pr = p_rows + r * T;
          float* dr = ds.data() + r * cols;
          const float weighted = dot(pr, dr, valid);
          for (int64_t j = 0; j < valid; ++j) dr[j] = pr[j] * (dr[j] - weighted) * scale;
          std::fill(dr + valid, dr + cols, 0.0f);
        }
        cpu_sgemm(false, false, rows, D, cols, 1.0f, ds.data(), cols, k, ld, 0.0f, dq + i0 * ld,
                  ld);
        cpu_sgemm(true, false, cols, D, rows, 1.0f, ds.data(), cols, q + i0 * ld, ld, 1.0f, dk, ld);
        cpu_sgemm(true, false, cols, D, rows, 1.0f, p_rows, T, dout_rows, s.width, 1.0f, dv, ld);
      }
    }
  });
  return dqkv;
}

class FusedCausalAttention : public torch::autograd::Function<FusedCausalAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               int64_t n_head) {
    // Named for profilers (the backward shows as its autograd node; this forward would not show).
    RECORD_FUNCTION("ddpt::causal_attention_forward", std::vector<c10::IValue>());
    const torch::Tensor packed = qkv.contiguous();
    auto [y, weights] = fused_forward(packed, n_head);
    ctx->save_for_backward({packed, weights});
    ctx->saved_data["n_head"] = n_head;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const int64_t n_head = ctx->saved_data["n_head"].toInt();
    return {fused_backward(grad_outputs[0], saved[0], saved[1], n_head), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor reference_causal_self_attention(const torch::Tensor& qkv, int64_t n_head,
                                              double dropout, bool training) {
  const Layout s = layout_of(qkv, n_head);
  const auto [q, k, v] = split_heads(qkv, s);
  torch::Tensor att = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(double(s.head_dim)));
  const torch::Tensor future =
      torch::ones({s.time, s.time}, torch::TensorOptions().dtype(torch::kBool).device(qkv.device()))
          .triu(1);
  att = torch::softmax(att.masked_fill(future, -std::numeric_limits<float>::infinity()), -1);
  if (training && dropout > 0) {
    namespace F = torch::nn::functional;
    att = F::dropout(att, F::DropoutFuncOptions().p(dropout).training(true));
  }
  return merge_heads(att.matmul(v), s);
}

bool fused_causal_attention_available(const torch::Tensor& qkv) {
  return cpu_gemm_available() && qkv.device().is_cpu() && qkv.scalar_type() == torch::kFloat &&
         !qkv.is_sparse();
}

torch::Tensor fused_causal_self_attention(const torch::Tensor& qkv, int64_t n_head) {
  TORCH_CHECK(fused_causal_attention_available(qkv),
              "fused causal attention: needs a float32 CPU tensor and a CPU GEMM, got ",
              qkv.dtype(), " on ", qkv.device());
  return FusedCausalAttention::apply(qkv, n_head);
}

torch::Tensor causal_self_attention(const torch::Tensor& qkv, int64_t n_head, double dropout,
                                    bool training) {
  // float32 on a CPU: the fused kernel on every LibTorch version, so that a GPT computes the same
  // numbers on LibTorch 1.13 and 2.x (2.6's scaled_dot_product_attention differs in the last
  // bits; the gpt deck's reference log holds with either).
  const bool dropping = training && dropout > 0;
  if (!dropping && fused_causal_attention_available(qkv)) {
    return fused_causal_self_attention(qkv, n_head);
  }
#if DDPTRAIN_TORCH_HAS_SDPA
  const Layout s = layout_of(qkv, n_head);
  const auto [q, k, v] = split_heads(qkv, s);
  return merge_heads(
      at::scaled_dot_product_attention(q, k, v, {}, training ? dropout : 0.0, /*is_causal=*/true),
      s);
#else
  return reference_causal_self_attention(qkv, n_head, dropout, training);
#endif
}

}  // namespace ddpt
