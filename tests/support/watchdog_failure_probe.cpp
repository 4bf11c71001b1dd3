// The watchdog's failure checks, on CPU: the path NCCL's asynchronous error takes (NcclComm
// registers ncclCommGetAsyncError as one), which no GPU-less machine can raise for real.
// Rank 1 registers a check that reports "injected failure" after 0.3 s, then sleeps 30 s, as a
// rank whose communicator failed sits waiting on a stream that never finishes; the other ranks
// wait for it in a barrier. The watchdog must end the job with exit code 5 and rank 1's error
// line within seconds, not after the sleep (tests/e2e/watchdog_failure_check.sh).
#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>

#include "comm/watchdog.hpp"
#include "runtime/mpi_env.hpp"

int main(int argc, char** argv) {
  ddpt::MpiEnv mpi(&argc, &argv);
  ddpt::Watchdog watchdog(MPI_COMM_WORLD, /*timeout_s=*/60.0);
  if (mpi.world_rank() == 1) {
    const auto start = std::chrono::steady_clock::now();
    const ddpt::Watchdog::Scope check =
        watchdog.watch_for_failure("injected communicator", [start]() -> std::string {
          if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300)) return {};
          return "injected failure";
        });
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}
