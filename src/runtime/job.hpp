// Where this rank runs, found once at the start of every subcommand with a deck: its place among
// the ranks and nodes, the device it drives (and its CPU threads), and the launcher's environment.
#pragma once

#include <cstdint>
#include <string>

#include "config/environment.hpp"
#include "runtime/device.hpp"
#include "runtime/topology.hpp"
#include "util/fault_injector.hpp"

namespace ddpt {

struct Job {
  Topology topology;
  DeviceChoice device;
  LaunchEnvironment launch;  // read once, here
};

// Collective over MPI_COMM_WORLD (the topology): detects the topology, then chooses and applies
// the device, with `requested_threads` CPU threads per rank (train.threads; 0: decide).
Job set_up_job(int64_t requested_threads);

// Refuses (exit 2, this rank) a node with more ranks than visible GPUs, where ranks would share a
// GPU: NCCL cannot put two ranks on one GPU, and sharing one halves each rank's memory. A node
// without GPUs (ranks on CPUs) passes.
// `faults` may let ranks share a GPU (a test's; FaultInjector::ranks_may_share_gpu).
void check_one_rank_per_gpu(const Job& job, const FaultInjector& faults = no_faults());
// Why `ranks` ranks on a node with `gpus` GPUs may not run, or "" if they may. Where a test lets
// ranks share a GPU (`sharing_allowed`), each must set its own NCCL_HOSTID (`launch`: NCCL then
// takes them for ranks on different hosts); that proves multi-rank logic on one GPU, not speed.
std::string gpu_sharing_refusal(int ranks, int gpus, bool sharing_allowed,
                                const LaunchEnvironment& launch);

}  // namespace ddpt
