// The watchdog's hang rule and flight records for a training run (dist.hang_factor,
// dist.hang_floor_s, dist.flight_records): a hang's flight files go to run.dir/flight, and the
// reporting rank's analysis reads them back (comm/flight_analysis.hpp).
#pragma once

#include "comm/host_group.hpp"
#include "comm/watchdog.hpp"
#include "config/config.hpp"

namespace ddpt {

// Collective over `group` (every rank of the job, watched by `watchdog`): the ranks agree on the
// job's name that their flight files carry. Before the training communicator's first collective.
void watch_for_hangs(Watchdog& watchdog, HostGroup& group, const Config& config);

}  // namespace ddpt
