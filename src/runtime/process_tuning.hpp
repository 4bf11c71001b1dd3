// Process settings that must be in place before MPI_Init and the first large allocation.
#pragma once

namespace ddpt {

// Each setting applies only where the user has not set it already (environment variables win):
// - Open MPI's MPI-IO through ROMIO, not OMPIO: checkpoints write and read faster.
// - A process started without a launcher starts no Open MPI daemon beside it.
// - glibc malloc keeps freed memory for reuse instead of returning large blocks to the kernel
//   and faulting their pages in again at the next step (see process_tuning.cpp).
// Open MPI's mpi_yield_when_idle is left to Open MPI, which turns it on where mpirun places more
// ranks than cores (see process_tuning.cpp for why ddptrain no longer sets it).
void tune_process();

// Hands the freed memory malloc keeps back to the kernel, after a large one-off release (ZeRO-3:
// each unit's values once sharded, or a model built whole before sharding); the heap's address
// range stays, and later allocations reuse it.
void return_freed_memory();

}  // namespace ddpt
