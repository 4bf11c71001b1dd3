// Every rank's steady steps side by side, for the run summary's `ranks' steps` line: in synchronous
// data parallel the step takes as long as the slowest rank's forward and backward, and the others
// wait for it in their comm wait. Rank 0's own split cannot say which rank that is (when rank 0 is
// the slow one, its comm wait is the smallest of all), so the summary names it, with its host: a
// rank on a slower core, node or GPU shows here before anyone profiles.
#pragma once

#include <string>
#include <vector>

#include "comm/host_group.hpp"
#include "step/step_split.hpp"

namespace ddpt {

struct RankSteps {
  std::string host;
  StepSplit split;  // the rank's steady steps (step/step_split.hpp)
};

// Collective over `group`: every rank's split and host name, by rank, on every rank.
std::vector<RankSteps> gather_rank_steps(HostGroup& group, const StepSplit& mine);

// "forward + backward 6.98..7.30 ms per step, slowest rank 1 (node-b); comm wait 0.05..1.21 ms";
// empty for fewer than two ranks or a rank without steady steps.
std::string describe_rank_steps(const std::vector<RankSteps>& ranks);

}  // namespace ddpt
