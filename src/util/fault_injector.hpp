// Faults that a test asks of a run, through one seam. A run without them has the injector that
// does nothing (no_faults()); setup/test_faults.cpp builds the one the DDPTRAIN_TEST_* variables
// ask for and hands it to the run, the trainer and the communicator, which call each hook where
// its fault happens. No production type keeps a member for a test (tests/lint/source_rules.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddpt {

class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  // Training step `step` (counted from 1, as the reports name it) is about to start.
  virtual void step_starts(int64_t /*step*/) {}
  // Inside each training step's first forward, counted as its time (a straggler sleeps here).
  virtual void in_forward() {}
  // Inside a phase (an evaluation, a checkpoint write), at its start and at its end.
  virtual void phase_starts(const std::string& /*phase*/) {}
  virtual void phase_ends(const std::string& /*phase*/) {}
  // Asked by the MPI communicator before an all-reduce takes its number: true leaves it out (no
  // sum, no flight record), so that the ranks' collectives part there.
  virtual bool leave_out_all_reduce() { return false; }
  // Whether a GPU training step that makes the host wait is an error (step/no_host_sync.hpp).
  virtual bool host_waits_forbidden() const { return false; }
  // Whether ranks may share a GPU where each sets its own NCCL_HOSTID (runtime/job.hpp).
  virtual bool ranks_may_share_gpu() const { return false; }
  // The batch size search's trials of more samples than this fail as a full GPU would, on any
  // device (run/batch_size_search.hpp); none: only the device's memory limits them.
  virtual std::optional<int64_t> trial_sample_limit() const { return std::nullopt; }
};

// The injector of a run that no test changes: every hook does nothing.
FaultInjector& no_faults();

}  // namespace ddpt
