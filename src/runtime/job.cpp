#include "runtime/job.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include "config/environment.hpp"
#include "util/error.hpp"

namespace ddpt {

Job set_up_job(int64_t requested_threads) {
  Job job;
  job.topology = Topology::detect(MPI_COMM_WORLD);
  job.launch = read_launch_environment();
  ThreadHints hints;
  hints.requested = requested_threads;
  hints.omp_num_threads = job.launch.omp_num_threads;
  hints.slurm_cpus_per_task = job.launch.slurm_cpus_per_task;
  job.device = choose_device(job.topology, hints);
  apply_device_choice(job.device);
  return job;
}

void check_one_rank_per_gpu(const Job& job) {
  if (!job.device.device.is_cuda()) return;
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  const int ranks = job.topology.local_size;
  if (ranks <= gpus) return;
  throw Error(fmt::format("{} ranks on this node but {} GPU(s) visible: ranks would share a GPU "
                          "(NCCL refuses that). Start one rank per GPU (srun "
                          "--ntasks-per-node={}, mpirun --map-by ppr:{}:node), or train on the "
                          "CPUs with CUDA_VISIBLE_DEVICES=''",
                          ranks, gpus, gpus, gpus),
              ExitCode::kUsage, Raised::kThisRank);
}

}  // namespace ddpt
