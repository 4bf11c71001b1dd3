#include "util/transposed_copy.hpp"

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ddpt {
namespace {

// Columns `col0` onwards, one value at a time: what the blocks below leave, and other targets.
void transpose_values(const float* in, int64_t rows, int64_t cols, int64_t col0, float* out,
                      int64_t out_stride) {
  for (int64_t j = col0; j < cols; ++j) {
    float* to = out + j * out_stride;
    for (int64_t k = 0; k < rows; ++k) to[k] = in[k * cols + j];
  }
}

#if defined(__SSE2__)
// The 4x4 block of `in` at row k, column j, transposed in registers: t[r] is column j + r.
void transpose_4x4(const float* in, int64_t cols, int64_t k, int64_t j, __m128 t[4]) {
  const float* from = in + k * cols + j;
  t[0] = _mm_loadu_ps(from);
  t[1] = _mm_loadu_ps(from + cols);
  t[2] = _mm_loadu_ps(from + 2 * cols);
  t[3] = _mm_loadu_ps(from + 3 * cols);
  _MM_TRANSPOSE4_PS(t[0], t[1], t[2], t[3]);
}

// Four rows of `out` at a time, each taking 16 values (a 64-byte cache line when `out` is so
// aligned) from four 4x4 transposes in registers, streamed one row's line after the other: a line
// written whole at once is neither read first nor kept in a cache (written 4 values to each row in
// turn, the same went at 10 GB/s). What is left of a row takes 4 values at a time, then one.
void transpose_streamed(const float* in, int64_t rows, int64_t cols, float* out,
                        int64_t out_stride) {
  const int64_t cols4 = cols - cols % 4;
  const int64_t rows4 = rows - rows % 4;
  for (int64_t j = 0; j < cols4; j += 4) {
    float* const to = out + j * out_stride;
    int64_t k = 0;
    for (; k + 16 <= rows4; k += 16) {
      __m128 t[4][4];  // [block][column]
      for (int64_t b = 0; b < 4; ++b) transpose_4x4(in, cols, k + 4 * b, j, t[b]);
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t b = 0; b < 4; ++b) _mm_stream_ps(to + r * out_stride + k + 4 * b, t[b][r]);
      }
    }
    for (; k < rows4; k += 4) {
      __m128 t[4];
      transpose_4x4(in, cols, k, j, t);
      for (int64_t r = 0; r < 4; ++r) _mm_stream_ps(to + r * out_stride + k, t[r]);
    }
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t kk = rows4; kk < rows; ++kk) to[r * out_stride + kk] = in[kk * cols + j + r];
    }
  }
  transpose_values(in, rows, cols, cols4, out, out_stride);
  _mm_sfence();  // streamed stores are ordered by nothing else
}
#endif

}  // namespace

void transposed_copy(const float* in, int64_t rows, int64_t cols, float* out, int64_t out_stride) {
#if defined(__SSE2__)
  if (reinterpret_cast<uintptr_t>(out) % 16 == 0 && out_stride % 4 == 0) {
    transpose_streamed(in, rows, cols, out, out_stride);
    return;
  }
#endif
  transpose_values(in, rows, cols, 0, out, out_stride);
}

}  // namespace ddpt
