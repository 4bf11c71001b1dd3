#include "runtime/device.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace ddpt {

int cores_available() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) return std::max(1, CPU_COUNT(&mask));
  return std::max(1u, std::thread::hardware_concurrency());
}

DeviceChoice choose_device(const Topology& topology, const ThreadHints& hints) {
  DeviceChoice choice;
  if (torch::cuda::is_available() && torch::cuda::device_count() > 0) {
    const auto visible = static_cast<int>(torch::cuda::device_count());
    choice.device = torch::Device(torch::kCUDA, static_cast<int8_t>(topology.local_rank % visible));
  }
  const int cores = cores_available();
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (hints.requested > 0) {
    choice.threads = static_cast<int>(hints.requested);
    choice.threads_why = "train.threads";
  } else if (hints.omp_num_threads) {
    choice.threads = *hints.omp_num_threads;
    choice.threads_why = "OMP_NUM_THREADS";
  } else if (hints.slurm_cpus_per_task) {
    choice.threads = *hints.slurm_cpus_per_task;
    choice.threads_why = "SLURM_CPUS_PER_TASK";
  } else if (cores < hardware) {
    // The launcher bound this rank to a subset of cores: that subset is ours alone.
    choice.threads = cores;
    choice.threads_why = "cores bound to this rank";
  } else {
    choice.threads = std::max(1, cores / std::max(1, topology.local_size));
    choice.threads_why = "cores / ranks on the node";
  }
  return choice;
}

void apply_device_choice(const DeviceChoice& choice) {
  torch::set_num_threads(choice.threads);
}

}  // namespace ddpt
