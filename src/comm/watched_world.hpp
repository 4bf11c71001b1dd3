// Every rank of the job under one deadline: the watchdog that puts dist.timeout_s on each of the
// job's collectives, and the group of all ranks for their agreements on the host, which it
// watches. Every subcommand with a deck starts one after the job (runtime/job.hpp).
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/host_group.hpp"
#include "comm/watchdog.hpp"

namespace ddpt {

struct WatchedWorld {
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<HostGroup> group;  // every rank of `world`
};

// Collective over `world`.
inline WatchedWorld watch_world(MPI_Comm world, double timeout_s) {
  WatchedWorld watched;
  watched.watchdog = std::make_unique<Watchdog>(world, timeout_s);
  watched.group = std::make_unique<HostGroup>(world, watched.watchdog.get());
  return watched;
}

}  // namespace ddpt
