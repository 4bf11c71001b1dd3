// The sum of the squares of float or double values, in double, in one pass and in a fixed order:
// 16 running sums (element i goes to sum i mod 16 of its run), so the loop vectorises and the
// result has the same bits on every CPU. Used for gradient norms: by the reducer over a bucket,
// and by the node-shared reduce-scatter over the values as it sums them (comm/node_all_reduce).
#pragma once

#include <cstdint>

namespace ddpt {

class SumOfSquares {
 public:
  // Adds `n` values. Runs may be added one after another; lanes are indexed within each run, so
  // the total depends on the runs and their values only.
  template <class T>
  void add(const T* values, int64_t n) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) {
        const double value = values[i + j];
        lanes_[j] += value * value;
      }
    }
    for (; i < n; ++i) lanes_[i % kLanes] += static_cast<double>(values[i]) * values[i];
  }
  double total() const {
    double sum = 0;
    for (const double lane : lanes_) sum += lane;
    return sum;
  }

 private:
  static constexpr int64_t kLanes = 16;
  double lanes_[kLanes] = {};
};

}  // namespace ddpt
