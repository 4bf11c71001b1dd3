// The loop of the node-shared all-reduce and reduce-scatter (comm/node_all_reduce): a run of the
// elementwise sum of the ranks' copies of a buffer, written to one or more places, and the sum of
// the squares of the summed values (ZeRO-1's gradient norm and finite check).
//
// Compiled for AVX-512, for AVX2 and for the baseline x86-64, and picked by the CPU's features
// once, as h5_fletcher32 does. Why: the binary is built for the baseline (it must run on any node),
// and there the squares, taken in double, cost about as much as the sum itself. One rank's share of
// the scaling MLP's reduce-scatter at 2 ranks took markedly less time with AVX-512 than at the
// baseline (benchmarks.md, "Choices measured": copy-sum per instruction set).
// Every path gives the same bits: the copies are added in rank order one element at a time, and the
// squares go to SumOfSquares' fixed lanes, in a file built without fused multiply-adds.
#pragma once

#include <cstdint>
#include <vector>

namespace ddpt {

enum class CopySumKernel { kBaseline, kAvx2, kAvx512 };

// The kernels this CPU runs, the baseline first; the last is the one sum_copies uses.
const std::vector<CopySumKernel>& runnable_copy_sum_kernels();
const char* copy_sum_kernel_name(CopySumKernel kernel);

// Elements [0, n) of copies[0] + copies[1] + ... (added in that order), written to each of `into`
// (which may be among the copies: each element is read before it is written). With `squares`, also
// the sum of the squares of the summed values, in double (util/sum_of_squares.hpp), into *squares.
// T is float or double.
template <class T>
void sum_copies(const std::vector<const T*>& copies, int64_t n, const std::vector<T*>& into,
                double* squares);
// The same with a given kernel, which this CPU must run (for tests and benchmarks).
template <class T>
void sum_copies(CopySumKernel kernel, const std::vector<const T*>& copies, int64_t n,
                const std::vector<T*>& into, double* squares);

}  // namespace ddpt
