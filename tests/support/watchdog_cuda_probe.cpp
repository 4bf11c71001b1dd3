// The watchdog's CUDA-event path on one GPU: NCCL allows one rank per GPU, and a 1-rank job
// starts no watchdog thread unless asked (Watchdog::Start::kAlways). A kernel that spins for
// about 20 s is queued on the compute stream, then an NCCL all-reduce, which waits for it. With
// a 2 s deadline the watchdog must see that the all-reduce's completion event has not fired,
// report the all-reduce within seconds and end the process with exit code 5
// (tests/e2e/watchdog_cuda_event.sh). Without a usable GPU it prints "[  SKIPPED ]" and exits 0.
#include <ATen/cuda/Sleep.h>
#include <cuda_runtime.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdio>

#include "comm/nccl_comm.hpp"
#include "comm/watchdog.hpp"
#include "runtime/mpi_env.hpp"

int main(int argc, char** argv) {
  ddpt::MpiEnv mpi(&argc, &argv);
  if (!torch::cuda::is_available()) {
    std::puts("[  SKIPPED ] no CUDA device usable by LibTorch");
    return 0;
  }
  ddpt::Watchdog watchdog(MPI_COMM_WORLD, /*timeout_s=*/2.0, ddpt::Watchdog::Start::kAlways);
  ddpt::NcclComm comm(MPI_COMM_WORLD, /*device_index=*/0, &watchdog);
  torch::Tensor tensor = torch::ones({1024}, torch::TensorOptions().device(torch::kCUDA, 0));
  torch::cuda::synchronize();
  constexpr int64_t kCycles = 40'000'000'000;  // about 20 s at the 2 GHz of an H100 or H200
  at::cuda::sleep(kCycles);                    // on torch's current stream: the compute stream
  const auto work = comm.all_reduce_async(tensor, ddpt::ReduceOp::kSum);
  std::puts("all-reduce queued behind a 20 s kernel; the watchdog's deadline is 2 s");
  std::fflush(stdout);
  cudaDeviceSynchronize();  // the watchdog should end the process before this returns
  std::puts("FAIL: the all-reduce completed and the watchdog never fired");
  return 1;
}
