// A block of float32 values written transposed into memory that is not read again soon (a model's
// weights as they are imported). The cost of such a transpose is in its writes: every row of the
// target takes a few values per block, and with ordinary stores each of those cache lines is first
// read from memory and later written back, a stream the prefetcher cannot follow. Where the target
// allows it (x86-64, 16-byte aligned rows), whole cache lines are written at once with streaming
// stores instead, which skip the read: on a 2-core Xeon VM, GPT-2's Conv1D weights went at 15.5-16
// GB/s this way against 2.6-3.6 GB/s a row at a time and 6.3-6.7 GB/s for memcpy of the same
// bytes. Streamed 4 values to each of 16 rows in turn, so that lines left the core before they
// were whole, the same went at 0.5 GB/s.
#pragma once

#include <cstdint>

namespace ddpt {

// out[j * out_stride + k] = in[k * cols + j] for k < rows, j < cols: `in` is `rows` rows of `cols`
// values, packed; `out` receives its columns as rows. The writes are visible to other threads
// once this returns.
void transposed_copy(const float* in, int64_t rows, int64_t cols, float* out, int64_t out_stride);

}  // namespace ddpt
