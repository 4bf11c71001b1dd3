// What every subcommand sets up first: where this rank sits, which device it drives, and the
// words that describe the job (the banner).
#pragma once

#include <memory>
#include <string>

#include "comm/host_group.hpp"
#include "comm/watchdog.hpp"
#include "config/config.hpp"
#include "config/environment.hpp"
#include "runtime/device.hpp"
#include "runtime/mpi_env.hpp"
#include "runtime/topology.hpp"

namespace ddpt {

struct Job {
  Topology topology;
  DeviceChoice device;
  LaunchEnvironment launch;            // read once, here
  std::unique_ptr<Watchdog> watchdog;  // dist.timeout_s over every collective of the job
  std::unique_ptr<HostGroup> group;    // every rank, for agreements the watchdog watches
};

// Collective over MPI_COMM_WORLD: detects the topology, chooses and applies the device, starts
// the watchdog and makes the group of every rank.
Job set_up_job(const Config& config);

// Refuses (exit 2, this rank) a node with more ranks than visible GPUs, where ranks would share a
// GPU: NCCL cannot put two ranks on one GPU, and sharing one halves each rank's memory. A node
// without GPUs (ranks on CPUs) passes.
void check_one_rank_per_gpu(const Job& job);

// The "is my job set up right" lines (printed by rank 0).
std::string describe_job(const Job& job, const std::string& backend);

}  // namespace ddpt
