// Single-precision matrix products on the CPU for ddptrain's own kernels (the built-in models'
// linear layers and the fused causal attention), row-major as LibTorch's tensors are.
//
// Which library runs them, decided once per process:
//   - oneDNN's sgemm, where ddptrain was built with it and oneDNN runs AVX-512 kernels on this
//     CPU. Debian's LibTorch runs its float32 products on OpenBLAS 0.3.21, which uses AVX2 kernels
//     even on AVX-512 CPUs it does not know (and these machines pin OPENBLAS_CORETYPE=Haswell);
//     oneDNN picks kernels by the instruction sets the CPU reports. On the 2-core AMD EPYC
//     (AVX-512) machine a linear layer's forward and backward ran much faster on oneDNN
//     (benchmarks.md, "Choices measured": oneDNN GEMM). LibTorch already loads libdnnl (its
//     convolutions).
//   - otherwise the Fortran BLAS that LibTorch itself calls (OpenBLAS through Debian's
//     alternatives): with oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA=AVX2) the same bench ran
//     oneDNN about as fast as OpenBLAS or slower, so oneDNN is not taken there.
// The decision reads oneDNN's effective instruction set, so ONEDNN_MAX_CPU_ISA steers it too.
#pragma once

#include <cstdint>
#include <string>

namespace ddpt {

// Whether a CPU GEMM was built in (oneDNN or a BLAS). Without one, callers use tensor operations.
bool cpu_gemm_available();

// What runs the products, e.g. "oneDNN 2.6.3 (AVX-512 kernels), for the built-in models": for the
// banner and `ddptrain info`.
std::string cpu_gemm_name();

// Row-major C[m x n] = alpha op(A) op(B) + beta C, with op(A) m x k and op(B) k x n; op is a
// transpose where trans_* is set. Leading dimensions are row strides, as for a row-major BLAS.
// Runs on the calling thread's OpenMP team (LibTorch's intra-op threads; one thread inside a
// parallel region). Throws std::runtime_error when oneDNN refuses the arguments or no GEMM was
// built in.
void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc);

}  // namespace ddpt
