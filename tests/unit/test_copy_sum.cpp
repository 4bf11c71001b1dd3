// The node-shared sum's kernels (comm/copy_sum.hpp): every kernel this CPU runs gives the bits of
// a plain loop, for the sums and for the sum of their squares, in float and in double, written to
// an output (reduce-scatter) or back into the copies (all-reduce). The ranks' copies summed through
// shared memory: tests/mpi/test_mpi_comm.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "comm/copy_sum.hpp"
#include "util/sum_of_squares.hpp"

namespace ddpt {
namespace {

// Not a multiple of the kernel's chunk (2048) nor of SumOfSquares' 16 lanes.
constexpr int64_t kLength = 3 * 2048 + 37;
constexpr int kCopies = 3;

// Values over many magnitudes, so each rounding shows in the bits.
template <class T>
std::vector<std::vector<T>> random_copies(unsigned seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<std::vector<T>> copies(kCopies, std::vector<T>(kLength));
  for (auto& copy : copies) {
    for (T& value : copy) value = static_cast<T>(std::ldexp(normal(random), exponent(random)));
  }
  return copies;
}

// The plain loop: copies added in order, element by element; squares in SumOfSquares' lanes.
template <class T>
std::vector<T> reference_sum(const std::vector<std::vector<T>>& copies, double* squares) {
  std::vector<T> sum(copies[0]);
  for (size_t p = 1; p < copies.size(); ++p) {
    for (int64_t i = 0; i < kLength; ++i) sum[i] += copies[p][i];
  }
  SumOfSquares summed;
  summed.add(sum.data(), kLength);
  *squares = summed.total();
  return sum;
}

template <class T>
std::vector<const T*> pointers_to(const std::vector<std::vector<T>>& copies) {
  std::vector<const T*> pointers;
  for (const auto& copy : copies) pointers.push_back(copy.data());
  return pointers;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
void expect_reference_bits_into_an_output() {
  const auto copies = random_copies<T>(7);
  double expected_squares = 0;
  const std::vector<T> expected = reference_sum(copies, &expected_squares);
  for (const CopySumKernel kernel : runnable_copy_sum_kernels()) {
    SCOPED_TRACE(copy_sum_kernel_name(kernel));
    std::vector<T> output(kLength, T(-1));
    double squares = -1;
    sum_copies<T>(kernel, pointers_to(copies), kLength, {output.data()}, &squares);
    EXPECT_TRUE(same_bits(output, expected));
    EXPECT_EQ(std::memcmp(&squares, &expected_squares, sizeof(double)), 0)
        << squares << " against " << expected_squares;
  }
}

template <class T>
void expect_reference_bits_in_every_copy() {
  const auto original = random_copies<T>(11);
  double expected_squares = 0;
  const std::vector<T> expected = reference_sum(original, &expected_squares);
  for (const CopySumKernel kernel : runnable_copy_sum_kernels()) {
    SCOPED_TRACE(copy_sum_kernel_name(kernel));
    auto copies = original;
    std::vector<T*> into;
    for (auto& copy : copies) into.push_back(copy.data());
    sum_copies<T>(kernel, pointers_to(copies), kLength, into, nullptr);
    for (const auto& copy : copies) EXPECT_TRUE(same_bits(copy, expected));
  }
}

TEST(CopySum, EveryKernelGivesThePlainLoopsBitsIntoAnOutputFloat) {
  expect_reference_bits_into_an_output<float>();
}

TEST(CopySum, EveryKernelGivesThePlainLoopsBitsIntoAnOutputDouble) {
  expect_reference_bits_into_an_output<double>();
}

TEST(CopySum, EveryKernelWritesTheSumBackIntoEveryCopyFloat) {
  expect_reference_bits_in_every_copy<float>();
}

TEST(CopySum, EveryKernelWritesTheSumBackIntoEveryCopyDouble) {
  expect_reference_bits_in_every_copy<double>();
}

}  // namespace
}  // namespace ddpt
