// Which device this rank drives and how many intra-op threads it uses.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "runtime/topology.hpp"

namespace ddpt {

struct ThreadHints {
  int64_t requested = 0;                   // train.threads; 0 = decide
  std::optional<int> omp_num_threads;      // OMP_NUM_THREADS
  std::optional<int> slurm_cpus_per_task;  // SLURM_CPUS_PER_TASK
};

struct DeviceChoice {
  torch::Device device = torch::kCPU;
  int threads = 1;          // intra-op threads for this rank
  std::string threads_why;  // which rule chose `threads`, for the banner
};

// GPU `local_rank` (modulo the GPUs visible) when LibTorch has CUDA and a device; else the CPU.
DeviceChoice choose_device(const Topology& topology, const ThreadHints& hints);
// Cores this process may run on (its affinity mask), at least 1.
int cores_available();
// Applies the choice: torch intra-op threads (and the CUDA device).
void apply_device_choice(const DeviceChoice& choice);

}  // namespace ddpt
