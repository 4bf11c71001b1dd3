// The faults the tests ask for through the environment, for this rank (util/fault_injector.hpp):
//   DDPTRAIN_TEST_SLOW_RANK=R:MS        rank R sleeps MS in each step's first forward (stragglers),
//                                       and before each batch of `generate`
//   DDPTRAIN_TEST_SLOW_PHASES=R:MS      rank R sleeps MS at the end of each evaluation and
//                                       checkpoint write, inside it (no false hang meanwhile)
//   DDPTRAIN_TEST_HOLD_PHASES=R:MS      rank R sleeps MS at the start of each evaluation and
//                                       checkpoint write, before its collectives (a rank stopped
//                                       while the others wait inside a phase)
//   DDPTRAIN_TEST_SKIP_ALL_REDUCE=R:S   rank R leaves out its first all-reduce of step S (MPI; the
//                                       flight analysis's parting point)
//   DDPTRAIN_TEST_NO_HOST_SYNC=1        a GPU step that makes the host wait is an error
//   DDPTRAIN_TEST_SHARE_GPU=1           ranks may share a GPU, each with its own NCCL_HOSTID
//   DDPTRAIN_TEST_BATCH_LIMIT=N         batch size trials of more than N samples fail as a full
//                                       GPU would, on any device (the search's CPU test)
// Every sleep says so on stderr, naming the phase, so that a test knows where the rank is.
#pragma once

#include <memory>

#include "util/fault_injector.hpp"

namespace ddpt {

// The injector for rank `rank`: no_faults() where none of the variables is set. ConfigError
// (exit 2) for a value that is not what the variable takes.
std::unique_ptr<FaultInjector> faults_from_environment(int rank);

}  // namespace ddpt
