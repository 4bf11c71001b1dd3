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
// MPI's reduction buffers on the communication thread) then faults all their pages in again.
// Measured on the 105M-parameter MLP of share/dev/bench/zero_checkpoint.sh (2-core VM, one thread
// per rank): 10.3 s per step at 1 rank with the mmaps, 0.59 s without; at 4 ranks 15-30 s against
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

void return_freed_memory() {
  malloc_trim(0);
}

// Open MPI's mpi_yield_when_idle is not set here (it was until 2026-11): a rank waiting in a
// collective then calls sched_yield() in a loop, and on Linux 6.18 (EEVDF) with autogroup that
// starves every process of other sessions while the ranks run in a session of their own, as
// under srun: a shell loop of `sleep 0.1` woke up to 36 s late, and slurmctld missed its 10 s
// RPC timeout (squeue: "Socket timed out"), on the 2-core test VM with 2 ranks of
// tests/cluster/requeue.cfg. Without it such gaps are rarer and shorter, not gone (largest gap
// per 15-25 s window: 1.8-16 s in 6 of 6 windows with it, over 1.8 s in 4 of 10 without, at most
// 10 s; at most 0.12 s with kernel.sched_autogroup_enabled = 0). It gained nothing where ranks do
// not outnumber cores (2 ranks, 2 cores, mpirun: scaling MLP 9674-10140 samples/s with it,
// 9870-9977 without; built-in GPT 539-546 against 524-536), and where they do, Open MPI turns it
// on by itself under mpirun (4 ranks on 2 cores: 8-10x faster with it).
void tune_process() {
  // MPI-IO through ROMIO rather than Open MPI's own OMPIO (excluded, not named: ROMIO's component
  // is romio321 in Open MPI 4.1 and romio341 in 5): checkpoints of 353 MB wrote in 0.49-0.85 s
  // instead of 1.05-1.40 s at 1 rank and 0.52 s instead of 0.88 s at 2 ranks, and read 1.4-3x
  // faster (build/bin/ddptrain-bench checkpoint, which share/dev/bench/checkpoint_io.sh runs, run
  // directly with OMPI_MCA_io=ompio and =romio321 in turns; 2-core VM, HDF5 1.10, Open MPI 4.1).
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
