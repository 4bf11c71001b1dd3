#include "runtime/job.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include "config/environment.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

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

std::string gpu_sharing_refusal(int ranks, int gpus, bool sharing_allowed,
                                const LaunchEnvironment& launch) {
  if (ranks <= gpus) return "";
  if (sharing_allowed) {
    if (!launch.nccl_hostid.empty()) return "";
    return "DDPTRAIN_TEST_SHARE_GPU=1 lets ranks share a GPU only where each rank sets its own "
           "NCCL_HOSTID (NCCL refuses two ranks on one GPU of one host); this rank has none";
  }
  return fmt::format(
      "{} ranks on this node but {} GPU(s) visible: ranks would share a GPU (NCCL refuses that). "
      "Start one rank per GPU (srun --ntasks-per-node={}, mpirun --map-by ppr:{}:node), or "
      "train on the CPUs with CUDA_VISIBLE_DEVICES=''",
      ranks, gpus, gpus, gpus);
}

void check_one_rank_per_gpu(const Job& job, const FaultInjector& faults) {
  if (!job.device.device.is_cuda()) return;
  const std::string refusal =
      gpu_sharing_refusal(job.topology.local_size, static_cast<int>(torch::cuda::device_count()),
                          faults.ranks_may_share_gpu(), job.launch);
  if (!refusal.empty()) throw Error(refusal, ExitCode::kUsage, Raised::kThisRank);
  if (job.topology.local_size > static_cast<int>(torch::cuda::device_count()) &&
      job.topology.world_rank == 0) {
    spdlog::warn(
        "DDPTRAIN_TEST_SHARE_GPU=1: {} ranks share {} GPU(s), each with its own "
        "NCCL_HOSTID (a test of multi-rank logic; not for speed)",
        job.topology.local_size, torch::cuda::device_count());
  }
}

}  // namespace ddpt
