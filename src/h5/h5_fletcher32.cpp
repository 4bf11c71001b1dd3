#include "h5/h5_fletcher32.hpp"

#include <hdf5.h>

#include <atomic>

#include "h5/h5_check.hpp"
#include "h5/h5_id.hpp"
#include "h5/h5_tensor.hpp"

namespace ddpt {
namespace {

// HDF5's fold interval: the most 16-bit words its 32-bit sums take without overflowing.
constexpr size_t kWordsPerFold = 360;

inline uint32_t fold(uint32_t sum) {
  return (sum & 0xffff) + (sum >> 16);
}

// H5_checksum_fletcher32's arithmetic, a fold interval at a time. HDF5 adds each big-endian word
// w_i to sum1 and then sum1 to sum2; over n words that adds S = sum of w_i to sum1 and
// n * sum1 + sum of (n - i) * w_i = n * sum1 + n * S - U, with U = sum of i * w_i, to sum2. All in
// uint32_t, which wraps as HDF5's sums would, and folded where HDF5 folds: the value is HDF5's
// exactly (not merely congruent modulo 65535). S and U have no dependence from word to word, so the
// compiler vectorises them.
__attribute__((always_inline)) inline uint32_t fletcher32_of(const uint8_t* data, size_t bytes) {
  uint32_t sum1 = 0;
  uint32_t sum2 = 0;
  for (size_t words = bytes / 2; words > 0;) {
    const auto n = static_cast<uint32_t>(words < kWordsPerFold ? words : kWordsPerFold);
    uint32_t s = 0;
    uint32_t u = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t w = (uint32_t{data[2 * i]} << 8) | data[2 * i + 1];
      s += w;
      u += i * w;
    }
    sum2 = fold(sum2 + n * sum1 + n * s - u);
    sum1 = fold(sum1 + s);
    data += 2 * size_t{n};
    words -= n;
  }
  if (bytes % 2 != 0) {  // the last byte as the high half of a word
    sum1 = fold(sum1 + (uint32_t{*data} << 8));
    sum2 = fold(sum2 + sum1);
  }
  return (fold(sum2) << 16) | fold(sum1);
}

// Compiled for AVX-512, for AVX2 and for the baseline, picked by the CPU's features once. The value
// is the same on every path (integer arithmetic).
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512bw,avx512vl"))) uint32_t fletcher32_avx512(const uint8_t* data,
                                                                                size_t bytes) {
  return fletcher32_of(data, bytes);
}
__attribute__((target("avx2"))) uint32_t fletcher32_avx2(const uint8_t* data, size_t bytes) {
  return fletcher32_of(data, bytes);
}
#endif
uint32_t fletcher32_baseline(const uint8_t* data, size_t bytes) {
  return fletcher32_of(data, bytes);
}

using Fletcher32Kernel = uint32_t (*)(const uint8_t*, size_t);

struct Kernel {
  Fletcher32Kernel function;
  const char* name;
};

Kernel pick_kernel() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return {fletcher32_avx512, "AVX-512"};
  }
  if (__builtin_cpu_supports("avx2")) return {fletcher32_avx2, "AVX2"};
#endif
  return {fletcher32_baseline, "baseline x86-64"};
}

const Kernel& kernel() {
  static const Kernel picked = pick_kernel();
  return picked;
}

std::atomic<uint64_t> hdf5_calls{0};

}  // namespace

uint32_t fletcher32(const void* data, size_t bytes) {
  return kernel().function(static_cast<const uint8_t*>(data), bytes);
}

uint64_t hdf5_fletcher32_calls() {
  return hdf5_calls.load(std::memory_order_relaxed);
}

}  // namespace ddpt

#if H5_VERS_MAJOR == 1 && H5_VERS_MINOR >= 8 && H5_VERS_MINOR <= 14
#define DDPTRAIN_SUMS_FOR_HDF5 1
#endif

// The definition HDF5's Fletcher32 filter calls (see h5_fletcher32.hpp), with the signature of
// HDF5's H5private.h, unchanged from 1.8 to 1.14; other versions keep HDF5's own. Kept in the link
// by src/CMakeLists.txt, since no ddptrain code calls it by this name.
#ifdef DDPTRAIN_SUMS_FOR_HDF5
extern "C" __attribute__((visibility("default"))) uint32_t H5_checksum_fletcher32(const void* data,
                                                                                  size_t len) {
  ddpt::hdf5_calls.fetch_add(1, std::memory_order_relaxed);
  return ddpt::fletcher32(data, len);
}
#endif

namespace ddpt {
namespace {

// Whether HDF5's filter calls this file's sum: one filtered chunk written into a file that lives in
// memory only (HDF5's core driver), counting the calls. A library that binds the call to its own
// copy (linked with -Bsymbolic-functions, say) is found out here, where a lookup of the name would
// still find this file's definition.
bool hdf5_sums_with_ours() {
  detail::silence_hdf5_error_printing();
  const Hdf5Lock lock;
  const uint64_t before = hdf5_fletcher32_calls();
  const H5Id access(DDPT_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS)));
  DDPT_CHECK_H5(H5Pset_fapl_core(access.get(), size_t{1} << 16, /*backing_store=*/false));
  const H5Id file(DDPT_CHECK_H5(
      H5Fcreate("ddptrain-fletcher32-probe.h5", H5F_ACC_TRUNC, H5P_DEFAULT, access.get())));
  // Closing the dataset sends its one chunk through the filter.
  write_tensor(file.get(), "values", torch::arange(4, torch::kInt32), /*writer=*/true);
  return hdf5_fletcher32_calls() > before;
}

}  // namespace

std::string hdf5_checksum_text() {
  unsigned version[3] = {0, 0, 0};
  H5get_libversion(&version[0], &version[1], &version[2]);
  static const bool ours = hdf5_sums_with_ours();
  return std::to_string(version[0]) + "." + std::to_string(version[1]) + "." +
         std::to_string(version[2]) + ", Fletcher32 sums by " +
         (ours ? std::string("ddptrain (") + kernel().name + ")" : std::string("HDF5"));
}

}  // namespace ddpt
