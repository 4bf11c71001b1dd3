#include "app/job.hpp"

#include <fmt/format.h>
#include <torch/version.h>

#include "comm/make_communicator.hpp"
#include "config/environment.hpp"
#include "h5/h5_fletcher32.hpp"
#include "models/cpu_convolutions.hpp"
#include "models/cpu_gemm.hpp"
#include "runtime/gpu_inventory.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/version.hpp"

namespace ddpt {

Job set_up_job(const Config& config) {
  Job job;
  job.topology = Topology::detect(MPI_COMM_WORLD);
  job.launch = read_launch_environment();
  ThreadHints hints;
  hints.requested = config.train.threads;
  hints.omp_num_threads = job.launch.omp_num_threads;
  hints.slurm_cpus_per_task = job.launch.slurm_cpus_per_task;
  job.device = choose_device(job.topology, hints);
  apply_device_choice(job.device);
  if (!job.device.device.is_cuda()) {
    // Before any model runs, on this rank's threads: a node's ranks share its CPU and libraries,
    // so one warning per node.
    const CpuConvolutions& convolutions = choose_cpu_convolutions();
    if (!convolutions.problem.empty() && job.topology.local_rank == 0) {
      spdlog::warn("{}", convolutions.problem);
    }
  }
  job.watchdog = std::make_unique<Watchdog>(MPI_COMM_WORLD, config.dist.timeout_s);
  job.group = std::make_unique<HostGroup>(MPI_COMM_WORLD, job.watchdog.get());
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

std::string describe_job(const Job& job, const std::string& backend) {
  const Topology& t = job.topology;
  const std::string per_node = t.uniform()
                                   ? std::to_string(t.local_size)
                                   : fmt::format("{}..{}", t.min_local_size, t.max_local_size);
  const LaunchEnvironment& env = job.launch;
  std::string text;
  text += fmt::format("ddptrain {}\n", ddptrain_version());
  text += fmt::format("  launcher        : {}{}\n", env.launcher,
                      env.slurm_job_id.empty() ? "" : " (job " + env.slurm_job_id + ")");
  text += fmt::format("  MPI             : {} ({})\n", MpiEnv::library_version(),
                      thread_level_name(MpiEnv::kRequiredThreadLevel));
  text += fmt::format("  ranks           : {} on {} node(s), {} per node\n", t.world_size,
                      t.node_count, per_node);
  text += fmt::format("  device (rank 0) : {}\n", job.device.device.str());
  text += fmt::format("  GPUs            : {}\n", describe_gpus());
  text += fmt::format("  CPU threads     : {} per rank ({}; {} core(s) available to rank 0)\n",
                      job.device.threads, job.device.threads_why, cores_available());
  text += fmt::format("  backend         : {}\n", backend);
  text +=
      fmt::format("  NCCL            : {}\n",
                  nccl_compiled() ? "compiled in, version " + nccl_version() : "not compiled in");
  text += fmt::format("  LibTorch        : {}\n", TORCH_VERSION);
  // The built-in models' float32 CPU products (models/cpu_gemm.hpp); LibTorch's own on GPUs.
  text += fmt::format("  CPU GEMM        : {}\n", cpu_gemm_name());
  text += fmt::format("  CPU convolutions: {}\n", choose_cpu_convolutions().text);
  text += fmt::format("  HDF5            : {}", hdf5_checksum_text());
  return text;
}

}  // namespace ddpt
