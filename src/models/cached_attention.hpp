// One new position's attention over a cache of keys and values, on the CPU in float32: what the
// built-in GPT runs for each new token while generating (models/token_decoder.hpp). LibTorch's
// tensor operations (baddbmm, softmax, bmm) make one small BLAS call per (row, head) and product,
// each doing little work at decoding's shapes (one query, a few dozen cached positions, heads of
// 16 to 64). Here each (row, head) is one pass of plain loops: the scores, their
// softmax, the values' weighted sum, written straight into y's [N, C] layout (heads side by side),
// so that no copy follows either.
#pragma once

#include <torch/torch.h>

namespace ddpt {

// Whether cached_attention runs on q: float32 on the CPU.
bool cached_attention_available(const torch::Tensor& q);

// y [N, heads x head_dim]: y[n, h] = softmax_j(scale q[n, h] . keys[n, h, j] + bias) values[n, h,
// j] over the L cached positions j. q [N, heads, head_dim], keys and values [N, heads, L,
// head_dim], each with a contiguous last dimension (views into the cache, any other strides);
// `bias` [N x heads or 1, 1, L or 1] (broadcast), -inf where a position may not be seen.
torch::Tensor cached_attention(const torch::Tensor& q, const torch::Tensor& keys,
                               const torch::Tensor& values, const torch::Tensor& bias, float scale);

}  // namespace ddpt
