// The built-in models' linear layer: y = x W^T + b, as torch::nn::Linear, with its products on
// cpu_gemm.hpp's GEMM (oneDNN where it has AVX-512 kernels, else the BLAS) for float32 CPU tensors
// outside autocast. Everything else (CUDA, other dtypes, bf16 autocast on a CPU) goes through
// LibTorch's own linear.
//
// Why not LibTorch's linear on the CPU: it runs on OpenBLAS, at about half of oneDNN's rate on an
// AVX-512 CPU (cpu_gemm.hpp says why). The three products of a training step (forward, the
// input's gradient, the weight's gradient) are the bulk of an MLP's or a GPT's step. In training,
// the weight's gradient is written straight into the weight's empty .grad where the backward
// hands it over (util/gradients_in_place.hpp), instead of into a tensor autograd then adds there.
//
// Same parameters as torch::nn::Linear (names `weight` and `bias`, shapes, initialisation), so
// checkpoints and deck references do not see which implementation ran; the numbers agree with
// LibTorch's within float32 rounding of the sums' order (tested), not to the last bit.
#pragma once

#include <torch/torch.h>

namespace ddpt {

// x [..., in], weight [out, in], bias [out] or undefined. Differentiable once.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

// Whether linear() takes the CPU GEMM path for these tensors (else LibTorch's linear).
bool linear_uses_cpu_gemm(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias);

// torch::nn::Linear with forward() through ddpt::linear.
class LinearImpl : public torch::nn::LinearImpl {
 public:
  using torch::nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& input) { return ddpt::linear(input, weight, bias); }
};
TORCH_MODULE(Linear);

}  // namespace ddpt
