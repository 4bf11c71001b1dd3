#include "app/process_tuning.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace ddpt {
namespace {

constexpr int kTrimThreshold = 1 << 30;

bool set_in_environment(const char* name) {
  return std::getenv(name) != nullptr;
}

// glibc serves a block above the mmap threshold (at most 32 MiB, whatever is asked) with its own
// mmap and unmaps it when it is freed, and a thread other than the main one allocates from an
// arena whose heaps are at most 64 MiB, so its large blocks are mmapped too. Every step of a
// model with large tensors (a 4096 x 4096 layer's gradient, AdamW's temporaries, Open MPI's
// reduction buffers on the communication thread) then faults all their pages in again. Measured
// on the 105M-parameter MLP of share/dev/bench/zero_checkpoint.sh (2-core VM, one thread per
// rank): 10.3 s per step at 1 rank with the mmaps, 0.59 s without; at 4 ranks 15-30 s against
// 2.4 s; an all_reduce of 64 MiB over 4 ranks at 0.14 GB/s against 0.96 GB/s bus bandwidth.
// So: no mmapped blocks (M_MMAP_MAX 0; a heap that cannot grow still falls back to mmap), one
// arena for all threads (blocks of any size come from the one heap and are reused), and freed
// memory at the top of the heap is kept up to 1 GiB. The process keeps its peak heap, as
// PyTorch's CUDA allocator keeps its peak on a GPU.
void keep_freed_memory() {
  // GLIBC_TUNABLES may set any of these (glibc.malloc.*): then the user decides all of them.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  if (!set_in_environment("MALLOC_MMAP_MAX_")) mallopt(M_MMAP_MAX, 0);
  if (!set_in_environment("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 1);
  if (!set_in_environment("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

}  // namespace

void tune_process() {
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  keep_freed_memory();
}

}  // namespace ddpt
