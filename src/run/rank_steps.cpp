#include "run/rank_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "util/process_identity.hpp"

namespace ddpt {
namespace {

// The fields of a StepSplit, as gathered.
constexpr int kFields = 8;

std::array<double, kFields> fields_of(const StepSplit& s) {
  return {s.zero_sync, s.data,   s.forward, s.backward,
          s.comm_wait, s.update, s.total,   static_cast<double>(s.steps)};
}

StepSplit split_of(const double* f) {
  StepSplit s;
  s.zero_sync = f[0];
  s.data = f[1];
  s.forward = f[2];
  s.backward = f[3];
  s.comm_wait = f[4];
  s.update = f[5];
  s.total = f[6];
  s.steps = static_cast<int64_t>(f[7]);
  return s;
}

double ms_per_step(double seconds, const StepSplit& s) {
  return 1e3 * seconds / static_cast<double>(s.steps);
}

}  // namespace

std::vector<RankSteps> gather_rank_steps(HostGroup& group, const StepSplit& mine) {
  const std::array<double, kFields> own = fields_of(mine);
  const std::vector<double> all =
      group.all_gather("ranks' step times", std::vector<double>(own.begin(), own.end()));
  const std::vector<std::string> hosts = group.all_gather("ranks' hosts", process_host());
  std::vector<RankSteps> ranks;
  for (int r = 0; r < group.size(); ++r) {
    ranks.push_back({hosts[static_cast<size_t>(r)], split_of(all.data() + kFields * r)});
  }
  return ranks;
}

std::string describe_rank_steps(const std::vector<RankSteps>& ranks) {
  if (ranks.size() < 2) return {};
  for (const RankSteps& r : ranks) {
    if (r.split.steps <= 0) return {};
  }
  auto compute = [](const RankSteps& r) {
    return ms_per_step(r.split.forward + r.split.backward, r.split);
  };
  auto wait = [](const RankSteps& r) { return ms_per_step(r.split.comm_wait, r.split); };
  const auto by_compute = [&](const RankSteps& a, const RankSteps& b) {
    return compute(a) < compute(b);
  };
  const auto by_wait = [&](const RankSteps& a, const RankSteps& b) { return wait(a) < wait(b); };
  const auto [fastest, slowest] = std::minmax_element(ranks.begin(), ranks.end(), by_compute);
  const auto [least, most] = std::minmax_element(ranks.begin(), ranks.end(), by_wait);
  return fmt::format(
      "forward + backward {:.2f}..{:.2f} ms per step, slowest rank {} ({}); comm wait "
      "{:.2f}..{:.2f} ms",
      compute(*fastest), compute(*slowest), slowest - ranks.begin(), slowest->host, wait(*least),
      wait(*most));
}

}  // namespace ddpt
