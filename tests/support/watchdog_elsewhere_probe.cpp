// The watchdog's report of ranks that are alive but elsewhere, one line each, with where they are
// (tests/e2e/watchdog_elsewhere.sh). 4 ranks, all at step 41: ranks 0 and 1 wait in
// "all-reduce #7" (a barrier) with a 2 s deadline; rank 2 spends 60 s in "checkpoint write at
// step 40" and rank 3 60 s computing (in no watched phase) before they join it, with a deadline
// (600 s) that does not pass meanwhile. Ranks 0 and 1 time out, ask every rank, and one of them
// reports: rank 2 "in 'checkpoint write at step 40' for N s", rank 3 "computing"; exit code 5.
#include <mpi.h>

#include <chrono>
#include <thread>

#include "comm/watchdog.hpp"
#include "runtime/mpi_env.hpp"

namespace {

constexpr double kWaitingDeadlineS = 2.0;      // the ranks in the barrier: passes soon
constexpr double kElsewhereDeadlineS = 600.0;  // the ranks elsewhere: never passes here
constexpr auto kElsewhere = std::chrono::seconds(60);

void be_elsewhere(ddpt::Watchdog& watchdog, int rank) {
  if (rank == 2) {
    const ddpt::Watchdog::Scope writing = watchdog.watch("checkpoint write at step 40");
    std::this_thread::sleep_for(kElsewhere);
  } else {
    std::this_thread::sleep_for(kElsewhere);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ddpt::MpiEnv mpi(&argc, &argv);
  const int rank = mpi.world_rank();
  const bool waiting = rank < 2;
  ddpt::Watchdog watchdog(MPI_COMM_WORLD, waiting ? kWaitingDeadlineS : kElsewhereDeadlineS);
  watchdog.set_step(41);
  if (waiting) {
    const ddpt::Watchdog::Scope in_barrier = watchdog.watch("all-reduce #7");
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    be_elsewhere(watchdog, rank);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return 0;
}
