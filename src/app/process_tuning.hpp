// Process settings that must be in place before MPI_Init and the first large allocation.
#pragma once

namespace ddpt {

// Each setting applies only where the user has not set it already (environment variables win):
// - Open MPI's mpi_yield_when_idle = 1: a rank waiting in a collective (on its communication
//   thread) yields the core instead of spinning, so the compute threads of ranks sharing cores
//   keep running. Measured on the GPT benchmark at 2 ranks on 2 cores: +8 to +30% samples/s.
// - Open MPI's MPI-IO through ROMIO, not OMPIO: checkpoints write and read faster.
// - glibc malloc keeps freed memory for reuse instead of returning large blocks to the kernel
//   and faulting their pages in again at the next step (see process_tuning.cpp).
void tune_process();

}  // namespace ddpt
