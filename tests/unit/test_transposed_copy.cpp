// util/transposed_copy.hpp: every value lands where the transpose puts it, and nothing outside
// the target's rows is written, for shapes that leave remainders to both the streamed blocks and
// the value-at-a-time edges, and for targets the streamed path cannot take (misaligned rows).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "util/transposed_copy.hpp"

namespace ddpt {
namespace {

constexpr float kUntouched = -1.0F;

// Copies a rows x cols block into a target of `out_stride` floats a row, starting `offset` floats
// into a 64-byte aligned allocation, and checks every float of that allocation.
void check_transpose(int64_t rows, int64_t cols, int64_t out_stride, int64_t offset) {
  SCOPED_TRACE(::testing::Message()
               << rows << " x " << cols << ", out_stride " << out_stride << ", offset " << offset);
  std::vector<float> in(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) + 0.5F;
  const int64_t size = offset + cols * out_stride + 8;
  const torch::Tensor out = torch::full({size}, kUntouched);  // LibTorch aligns to 64 bytes
  float* const base = out.data_ptr<float>();
  transposed_copy(in.data(), rows, cols, base + offset, out_stride);
  for (int64_t at = 0; at < size; ++at) {
    const int64_t j = (at - offset) / out_stride;
    const int64_t k = (at - offset) % out_stride;
    const bool in_target = at >= offset && j < cols && k < rows;
    const float want = in_target ? in[static_cast<size_t>(k * cols + j)] : kUntouched;
    ASSERT_EQ(base[at], want) << "at float " << at;
  }
}

TEST(TransposedCopy, EveryValueToItsPlaceAndNoOther) {
  for (const int64_t rows : {0, 1, 3, 4, 5, 15, 16, 17, 32, 35, 52}) {
    for (const int64_t cols : {0, 1, 3, 4, 7, 16, 33}) {
      const int64_t aligned_stride = (rows + 3) / 4 * 4 + 4;
      check_transpose(rows, cols, aligned_stride, 0);  // streamed
      check_transpose(rows, cols, aligned_stride, 4);  // streamed, not line-aligned
      check_transpose(rows, cols, aligned_stride, 1);  // misaligned: value at a time
      check_transpose(rows, cols, std::max<int64_t>(rows, 1) + 1, 0);  // odd stride: same
      check_transpose(rows, cols, std::max<int64_t>(rows, 1), 0);      // rows packed
    }
  }
}

}  // namespace
}  // namespace ddpt
