// The benchmarks' summary statistic: these machines are noisy, so each figure is a median.
#pragma once

#include <algorithm>
#include <vector>

namespace ddpt::bench {

// The middle value (the upper one of an even count); v must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace ddpt::bench
