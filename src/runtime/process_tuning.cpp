#include "runtime/process_tuning.hpp"

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
// mmap and unmaps it when it is freed; with that off, a thread other than the main one still maps
// each block of about 64 MiB and more afresh, since its arena's heaps are at most 64 MiB. Every
// step of a model with large tensors (a 4096 x 4096 layer's gradient, AdamW's temporaries, Open
// MPI's reduction buffers on the communication thread) then faults all their pages in again,
// which made every step of a large MLP many times slower, and its all-reduce too (benchmarks.md,
// "Choices measured": malloc keeps freed memory). So: no mmapped blocks (M_MMAP_MAX 0; a heap
// that cannot grow still falls back to mmap), one arena for all threads (blocks of any size come
// from the one heap and are reused), and freed memory at the top of the heap is kept up to 1 GiB.
// The process keeps its peak heap, as PyTorch's CUDA allocator keeps its peak on a GPU.
void keep_freed_memory() {
  // GLIBC_TUNABLES may set any of these (glibc.malloc.*): then the user decides all of them.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  if (!set_in_environment("MALLOC_MMAP_MAX_")) mallopt(M_MMAP_MAX, 0);
  if (!set_in_environment("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 1);
  if (!set_in_environment("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

}  // namespace

void return_freed_memory() {
  malloc_trim(0);
}

// Open MPI's mpi_yield_when_idle is not set here (it was until 2026-11): a rank waiting in a
// collective then calls sched_yield() in a loop, and on Linux 6.18 (EEVDF) with autogroup that
// starves every process of other sessions while the ranks run in a session of their own, as
// under srun: a shell loop of `sleep 0.1` woke up many seconds late, and slurmctld missed its
// 10 s RPC timeout (squeue: "Socket timed out"), on the 2-core test VM with 2 ranks of
// tests/cluster/requeue.cfg. Without it such gaps are rarer and shorter, not gone (and short with
// kernel.sched_autogroup_enabled = 0). It gained nothing where ranks do not outnumber cores, and
// where they do, Open MPI turns it on by itself under mpirun, and there it is much faster
// (benchmarks.md, "Choices measured": no yield when idle).
void tune_process() {
  // MPI-IO through ROMIO rather than Open MPI's own OMPIO (excluded, not named: ROMIO's component
  // is romio321 in Open MPI 4.1 and romio341 in 5): checkpoints write faster through it, at 1 rank
  // and at 2, and read faster (benchmarks.md, "Choices measured": ROMIO, not OMPIO).
  // Other MPIs (MPICH, Cray MPICH, Intel MPI) have only ROMIO and ignore this.
  setenv("OMPI_MCA_io", "^ompio", /*overwrite=*/0);
  // A process started without mpirun or srun (`inspect`, `make-data`, `--help`, a usage error, a
  // 1-rank run) is an MPI singleton, for which Open MPI 4 forks its orted daemon; the daemon serves
  // only MPI_Comm_spawn and connect/accept, which ddptrain never calls, and slows each such start
  // (benchmarks.md, "Start-up"). Launched ranks do not read this parameter; Open MPI 5 starts no
  // daemon for a singleton.
  setenv("OMPI_MCA_ess_singleton_isolated", "1", /*overwrite=*/0);
  keep_freed_memory();
}

}  // namespace ddpt
