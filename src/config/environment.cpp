#include "config/environment.hpp"

#include <cstdlib>
#include <string>

namespace ddpt {
namespace {

std::string env_text(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// A positive integer from the environment, or nothing when unset or malformed.
std::optional<int> env_positive_int(const char* name) {
  const std::string text = env_text(name);
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

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment env;
  env.slurm_cpus_per_task = env_positive_int("SLURM_CPUS_PER_TASK");
  env.omp_num_threads = env_positive_int("OMP_NUM_THREADS");
  env.slurm_job_id = env_text("SLURM_JOB_ID");
  env.nccl_hostid = env_text("NCCL_HOSTID");
  if (!env_text("SLURM_STEP_ID").empty() || !env_text("SLURM_PROCID").empty()) {
    env.launcher = "slurm";
  } else if (!env_text("OMPI_COMM_WORLD_SIZE").empty() || !env_text("PMIX_RANK").empty()) {
    env.launcher = "mpirun";
  } else {
    env.launcher = "none";
  }
  return env;
}

}  // namespace ddpt
