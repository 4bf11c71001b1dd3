#include "run/straggler_watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ddpt {
double StragglerWatch::median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

StragglerWatch::StragglerWatch(double factor, std::vector<std::string> hosts)
    : factor_(factor),
      hosts_(std::move(hosts)),
      slow_rows_(hosts_.size(), 0),
      named_(hosts_.size(), 0) {}

std::vector<std::string> StragglerWatch::observe(int64_t step,
                                                 const std::vector<double>& compute_s) {
  std::vector<std::string> lines;
  if (factor_ <= 1 || compute_s.size() < 2 || compute_s.size() != hosts_.size()) return lines;
  const double typical = median(compute_s);
  if (!(typical > 0)) return lines;  // no steps timed in this row
  for (size_t r = 0; r < compute_s.size(); ++r) {
    const bool slow = std::isfinite(compute_s[r]) && compute_s[r] > factor_ * typical &&
                      compute_s[r] - typical >= kMinExcessS;
    if (!slow) {
      slow_rows_[r] = 0;
      named_[r] = 0;  // recovered: named again if it relapses
      continue;
    }
    if (++slow_rows_[r] < kRowsRunning || named_[r]) continue;
    named_[r] = 1;
    lines.push_back(fmt::format(
        "straggler: rank {} ({}) took {:.2f} ms per step in forward + backward, {:.2f}x the "
        "median of the {} ranks ({:.2f} ms), for {} metrics rows up to step {}; every rank "
        "waits for it",
        r, hosts_[r], 1e3 * compute_s[r], compute_s[r] / typical, compute_s.size(), 1e3 * typical,
        slow_rows_[r], step));
  }
  return lines;
}

}  // namespace ddpt
