// Process settings that must be in place before MPI_Init and the first large allocation.
#pragma once

namespace ddpt {

// Each setting applies only where the user has not set it already (environment variables win):
// - Open MPI's mpi_yield_when_idle = 1: a rank waiting in a collective (on its communication
//   thread) yields the core instead of spinning, so the compute threads of ranks sharing cores
//   keep running. Measured on the GPT benchmark at 2 ranks on 2 cores: +8 to +30% samples/s.
// - glibc malloc keeps freed blocks for reuse (mmap threshold 32 MiB, trim threshold 1 GiB)
//   instead of returning every large tensor's pages to the kernel and faulting them in again at
//   the next step: about 10x fewer minor page faults per step, 3-4x less system time.
void tune_process();

}  // namespace ddpt
