// Causal multi-head self-attention of a GPT block, from the packed projection that GPT-2's c_attn
// produces: qkv [N, T, 3C] holds q, k and v side by side, each C = n_head x head_dim wide. The
// result is [N, T, C] with the heads side by side, ready for c_proj. Scores are q.k /
// sqrt(head_dim); position i attends to positions 0..i; dropout on the attention weights when
// training.
//
// Three implementations, one picked per call by causal_self_attention():
//   - CPU float32 without attention dropout, on any LibTorch: a fused kernel (this file's reason
//     to exist). The tensor-op version makes eleven passes over the [N, heads, T, T] scores per
//     layer, copies q, k, v and y into head-major order, and runs bmm as one small GEMM per
//     matrix behind a select(); the fused kernel reads q, k, v in place, computes only the
//     columns each causal row needs, and writes y and the gradient of qkv in place. Forward and
//     backward take several times less time at every shape measured (benchmarks.md, "Choices
//     measured": fused CPU attention). Taken on LibTorch 2.x too, so that the CPU numbers do not
//     depend on the LibTorch version (its speed against 2.x's scaled_dot_product_attention on a
//     CPU is not measured).
//   - Otherwise (CUDA, bf16/fp16 under autocast, dropout) on LibTorch 2.x:
//     at::scaled_dot_product_attention (flash / memory-efficient kernels).
//   - Otherwise on LibTorch 1.x: the tensor-op reference.
#pragma once

#include <torch/torch.h>

namespace ddpt {

torch::Tensor causal_self_attention(const torch::Tensor& qkv, int64_t n_head, double dropout,
                                    bool training);

// The tensor-op version: any device and dtype, differentiable any number of times.
torch::Tensor reference_causal_self_attention(const torch::Tensor& qkv, int64_t n_head,
                                              double dropout, bool training);

// Whether the fused CPU kernel can run on qkv (CPU, float32, and a CPU GEMM to call:
// models/cpu_gemm.hpp).
bool fused_causal_attention_available(const torch::Tensor& qkv);

// The fused CPU kernel, no dropout; differentiable once (its backward is not itself recorded).
torch::Tensor fused_causal_self_attention(const torch::Tensor& qkv, int64_t n_head);

}  // namespace ddpt
