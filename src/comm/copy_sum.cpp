#include "comm/copy_sum.hpp"

#include <algorithm>
#include <string>

#include "util/error.hpp"
#include "util/sum_of_squares.hpp"

// Built with -ffp-contract=off (src/CMakeLists.txt): a square added to a lane must round twice on
// every path, and GCC fuses them on the AVX-512 path otherwise (seen in its code). For floats that
// cannot change a bit (a float's square is exact in double); for doubles it can.

namespace ddpt {
namespace {

// Summed through a small local array, so each loop vectorises, the squares are taken from the
// array (the data is not read again), and destinations that are also copies are written only
// after the whole chunk of every copy has been read.
template <class T>
__attribute__((always_inline)) inline void sum_copies_of(const std::vector<const T*>& copies,
                                                         int64_t n, const std::vector<T*>& into,
                                                         double* squares) {
  constexpr int64_t kChunk = 2048;  // a multiple of SumOfSquares' 16 lanes
  alignas(64) T acc[kChunk];
  SumOfSquares summed_squares;
  for (int64_t first = 0; first < n; first += kChunk) {
    const int64_t count = std::min(kChunk, n - first);
    const T* copy0 = copies[0] + first;
    for (int64_t i = 0; i < count; ++i) acc[i] = copy0[i];
    for (size_t p = 1; p < copies.size(); ++p) {
      const T* copy = copies[p] + first;
      for (int64_t i = 0; i < count; ++i) acc[i] += copy[i];
    }
    for (T* destination : into) std::copy_n(acc, count, destination + first);
    if (squares != nullptr) summed_squares.add(acc, count);
  }
  if (squares != nullptr) *squares = summed_squares.total();
}

#if defined(__x86_64__) && defined(__GNUC__)
#define DDPT_HAVE_X86_KERNELS 1
template <class T>
__attribute__((target("avx512f,avx512vl"))) void sum_copies_avx512(
    const std::vector<const T*>& copies, int64_t n, const std::vector<T*>& into, double* squares) {
  sum_copies_of(copies, n, into, squares);
}
template <class T>
__attribute__((target("avx2"))) void sum_copies_avx2(const std::vector<const T*>& copies, int64_t n,
                                                     const std::vector<T*>& into, double* squares) {
  sum_copies_of(copies, n, into, squares);
}
#endif
template <class T>
void sum_copies_baseline(const std::vector<const T*>& copies, int64_t n,
                         const std::vector<T*>& into, double* squares) {
  sum_copies_of(copies, n, into, squares);
}

std::vector<CopySumKernel> find_runnable() {
  std::vector<CopySumKernel> kernels{CopySumKernel::kBaseline};
#ifdef DDPT_HAVE_X86_KERNELS
  if (__builtin_cpu_supports("avx2")) kernels.push_back(CopySumKernel::kAvx2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
    kernels.push_back(CopySumKernel::kAvx512);
  }
#endif
  return kernels;
}

}  // namespace

const std::vector<CopySumKernel>& runnable_copy_sum_kernels() {
  static const std::vector<CopySumKernel> runnable = find_runnable();
  return runnable;
}

const char* copy_sum_kernel_name(CopySumKernel kernel) {
  switch (kernel) {
    case CopySumKernel::kAvx512:
      return "AVX-512";
    case CopySumKernel::kAvx2:
      return "AVX2";
    case CopySumKernel::kBaseline:
      break;
  }
  return "baseline x86-64";
}

template <class T>
void sum_copies(CopySumKernel kernel, const std::vector<const T*>& copies, int64_t n,
                const std::vector<T*>& into, double* squares) {
  const std::vector<CopySumKernel>& runnable = runnable_copy_sum_kernels();
  if (std::find(runnable.begin(), runnable.end(), kernel) == runnable.end()) {
    throw Error(std::string("sum_copies: this CPU cannot run the ") + copy_sum_kernel_name(kernel) +
                    " kernel",
                ExitCode::kInternal, Raised::kThisRank);
  }
  if (copies.empty()) {
    throw Error("sum_copies: no copies to sum", ExitCode::kInternal, Raised::kThisRank);
  }
  switch (kernel) {
#ifdef DDPT_HAVE_X86_KERNELS
    case CopySumKernel::kAvx512:
      return sum_copies_avx512(copies, n, into, squares);
    case CopySumKernel::kAvx2:
      return sum_copies_avx2(copies, n, into, squares);
#endif
    default:
      return sum_copies_baseline(copies, n, into, squares);
  }
}

template <class T>
void sum_copies(const std::vector<const T*>& copies, int64_t n, const std::vector<T*>& into,
                double* squares) {
  static const CopySumKernel best = runnable_copy_sum_kernels().back();
  sum_copies(best, copies, n, into, squares);
}

template void sum_copies<float>(const std::vector<const float*>&, int64_t,
                                const std::vector<float*>&, double*);
template void sum_copies<double>(const std::vector<const double*>&, int64_t,
                                 const std::vector<double*>&, double*);
template void sum_copies<float>(CopySumKernel, const std::vector<const float*>&, int64_t,
                                const std::vector<float*>&, double*);
template void sum_copies<double>(CopySumKernel, const std::vector<const double*>&, int64_t,
                                 const std::vector<double*>&, double*);

}  // namespace ddpt
