#include "models/cpu_gemm.hpp"

#include <fmt/format.h>

#include <stdexcept>

#ifdef DDPTRAIN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#ifdef DDPTRAIN_HAVE_BLAS
// The Fortran BLAS entry point: LibTorch itself calls the same one (OpenBLAS through Debian's
// alternatives).
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);
#endif

namespace ddpt {
namespace {

enum class Gemm { kOnednn, kBlas, kNone };

Gemm pick_gemm() {
#ifdef DDPTRAIN_HAVE_ONEDNN
  // Every AVX-512 level oneDNN knows includes avx512_core's bits (the enum is a bit mask).
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  const bool avx512_kernels = (isa & avx512) == avx512;
#ifdef DDPTRAIN_HAVE_BLAS
  return avx512_kernels ? Gemm::kOnednn : Gemm::kBlas;
#else
  (void)avx512_kernels;
  return Gemm::kOnednn;
#endif
#elif defined(DDPTRAIN_HAVE_BLAS)
  return Gemm::kBlas;
#else
  return Gemm::kNone;
#endif
}

// Decided at the first product: oneDNN reads ONEDNN_MAX_CPU_ISA once, and so does this.
Gemm gemm() {
  static const Gemm chosen = pick_gemm();
  return chosen;
}

#ifdef DDPTRAIN_HAVE_ONEDNN
void onednn_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha,
                                          a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    throw std::runtime_error(
        fmt::format("oneDNN sgemm refused {}x{}x{} (lda {}, ldb {}, ldc {}): status {}", m, n, k,
                    lda, ldb, ldc, static_cast<int>(status)));
  }
}
#endif

#ifdef DDPTRAIN_HAVE_BLAS
void blas_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  // Column-major BLAS sees every row-major matrix transposed: C^T = op(B)^T op(A)^T.
  const char ta = trans_b ? 'T' : 'N';
  const char tb = trans_a ? 'T' : 'N';
  const int mm = static_cast<int>(n), nn = static_cast<int>(m), kk = static_cast<int>(k);
  const int la = static_cast<int>(ldb), lb = static_cast<int>(lda), lc = static_cast<int>(ldc);
  sgemm_(&ta, &tb, &mm, &nn, &kk, &alpha, b, &la, a, &lb, &beta, c, &lc);
}
#endif

}  // namespace

bool cpu_gemm_available() {
  return gemm() != Gemm::kNone;
}

std::string cpu_gemm_name() {
  switch (gemm()) {
    case Gemm::kOnednn: {
#ifdef DDPTRAIN_HAVE_ONEDNN
      const dnnl_version_t* v = dnnl_version();
      return fmt::format("oneDNN {}.{}.{} (AVX-512 kernels), for the built-in models", v->major,
                         v->minor, v->patch);
#else
      break;
#endif
    }
    case Gemm::kBlas:
      return "LibTorch's BLAS, for the built-in models";
    case Gemm::kNone:
      break;
  }
  return "none: the built-in models use LibTorch's operations";
}

void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc) {
  switch (gemm()) {
#ifdef DDPTRAIN_HAVE_ONEDNN
    case Gemm::kOnednn:
      return onednn_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
#ifdef DDPTRAIN_HAVE_BLAS
    case Gemm::kBlas:
      return blas_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
    default:
      (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
      (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;  // used by neither path built in
      throw std::runtime_error("ddptrain was built without a CPU GEMM (neither oneDNN nor a BLAS)");
  }
}

}  // namespace ddpt
