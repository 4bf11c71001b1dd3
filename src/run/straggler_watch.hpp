// Stragglers named while the job runs: in synchronous data parallel every step takes as long as the
// slowest rank's forward and backward, so one slow rank (a throttled core, a busy node, a failing
// GPU) slows the whole job, and nothing said so until the summary. At each metrics row every rank's
// forward + backward time per step is gathered (it also goes to metrics.h5's /ranks/); a rank
// slower than the median of all ranks by `dist.straggler_factor` (and by at least kMinExcessS per
// step) in `kRowsRunning` rows running gets one warning line naming it and its host. It is named
// once, and again only after a row where it was not slow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpt {

class StragglerWatch {
 public:
  // Rows in a row a rank must be slow in before it is named: one slow row is noise (a checkpoint
  // write on its node, the page cache).
  static constexpr int kRowsRunning = 3;
  // And at least this much slower per step: below it, on steps of a millisecond or less, the
  // factor is crossed by noise (a busy core, the page cache) and the wait costs little.
  static constexpr double kMinExcessS = 1e-3;

  // `factor` (dist.straggler_factor) <= 1: nothing is ever named. `hosts`: by rank.
  StragglerWatch(double factor, std::vector<std::string> hosts);

  // The median the ranks are judged against (for an even count, the mean of the middle two).
  static double median(std::vector<double> values);

  // The row ending at step `step`: each rank's forward + backward seconds per step, by rank.
  // Returns the warning lines to print now (one per newly named rank).
  std::vector<std::string> observe(int64_t step, const std::vector<double>& compute_s);

 private:
  double factor_;
  std::vector<std::string> hosts_;
  std::vector<int> slow_rows_;  // by rank: rows in a row slower than the median by the factor
  std::vector<char> named_;     // by rank: named, and not slow since
};

}  // namespace ddpt
