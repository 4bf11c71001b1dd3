#include "config/environment.hpp"

#include <cstdlib>
#include <string>

namespace ddpt {
namespace {

// A positive integer from the environment, or nothing when unset or malformed.
std::optional<int> env_positive_int(const char* name) {
  const std::string text = environment_text(name);
  if (text.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

std::string environment_text(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment env;
  env.slurm_cpus_per_task = env_positive_int("SLURM_CPUS_PER_TASK");
  env.omp_num_threads = env_positive_int("OMP_NUM_THREADS");
  env.slurm_job_id = environment_text("SLURM_JOB_ID");
  env.nccl_hostid = environment_text("NCCL_HOSTID");
  if (!environment_text("SLURM_STEP_ID").empty() || !environment_text("SLURM_PROCID").empty()) {
    env.launcher = "slurm";
  } else if (!environment_text("OMPI_COMM_WORLD_SIZE").empty() ||
             !environment_text("PMIX_RANK").empty()) {
    env.launcher = "mpirun";
  } else {
    env.launcher = "none";
  }
  return env;
}

}  // namespace ddpt
