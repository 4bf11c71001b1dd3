// ddptrain's fletcher32() (h5/h5_fletcher32.hpp) against HDF5's loop: the same values for every
// length, alignment and the largest sums. HDF5's filter calling it: test_h5.cpp (H5.Fletcher32*);
// h5py, which has its own HDF5, verifies the files ddptrain writes in tests/e2e.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "h5/h5_fletcher32.hpp"

namespace ddpt {
namespace {

// HDF5's H5_checksum_fletcher32 (H5checksum.c, unchanged since 1.8), word by word: the reference.
uint32_t hdf5_loop(const uint8_t* data, size_t bytes) {
  size_t words = bytes / 2;
  uint32_t sum1 = 0;
  uint32_t sum2 = 0;
  while (words > 0) {
    size_t n = words > 360 ? 360 : words;
    words -= n;
    do {
      sum1 += (uint32_t{data[0]} << 8) | uint32_t{data[1]};
      data += 2;
      sum2 += sum1;
    } while (--n > 0);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (bytes % 2 != 0) {
    sum1 += uint32_t{*data} << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

TEST(H5Fletcher32, SumIsHdf5sForEveryLengthAndAlignment) {
  std::mt19937 random(7);
  std::vector<uint8_t> random_bytes((size_t{4} << 20) + 8);
  for (auto& b : random_bytes) b = static_cast<uint8_t>(random());
  const std::vector<uint8_t> ones(random_bytes.size(), 0xff);  // the largest sums
  const std::vector<uint8_t> zeros(random_bytes.size(), 0);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 1500; ++n) lengths.push_back(n);  // past two fold intervals (720 bytes)
  for (const size_t n : {size_t{4} << 20, (size_t{4} << 20) + 1, size_t{65537}, size_t{720 * 7}})
    lengths.push_back(n);
  const std::vector<const std::vector<uint8_t>*> sources = {&random_bytes, &ones, &zeros};
  for (const size_t n : lengths) {
    for (size_t offset = 0; offset < 4; ++offset) {
      for (const auto* source : sources) {
        const uint8_t* data = source->data() + offset;
        ASSERT_EQ(fletcher32(data, n), hdf5_loop(data, n))
            << n << " bytes at offset " << offset << (source == &ones ? " (all 0xff)" : "");
      }
    }
  }
}

}  // namespace
}  // namespace ddpt
