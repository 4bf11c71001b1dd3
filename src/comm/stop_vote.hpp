// All ranks agree, at each step boundary, whether to stop: a signal may reach one rank (a user's
// `kill -USR1`) or all of them at slightly different steps (SLURM), yet every rank must stop
// after the same step, so that nobody is left alone in a collective and the checkpoint written
// then is complete. One small MPI all-reduce on the host, on its own communicator: it does not
// touch the GPU stream, and is watched like every collective.
#pragma once

#include <mpi.h>

#include "comm/watchdog.hpp"
#include "runtime/mpi_comm_handle.hpp"

namespace ddpt {

class StopVote {
 public:
  // Collective over `comm` (MPI_Comm_dup). `watchdog` may be null.
  StopVote(MPI_Comm comm, Watchdog* watchdog);

  // Collective: the largest signal number any rank passes (0 = nobody wants to stop).
  int agree(int local_signal);

 private:
  MpiCommHandle comm_;
  int size_ = 1;
  Watchdog* watchdog_;
  int64_t votes_ = 0;  // names the vote in watchdog reports
};

}  // namespace ddpt
