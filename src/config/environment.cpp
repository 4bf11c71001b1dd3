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

// Test hooks' "R:VALUE".
void read_rank_and_value(const char* name, int& rank, double& value) {
  const std::string text = env_text(name);
  if (const size_t colon = text.find(':'); colon != std::string::npos) {
    rank = std::atoi(text.substr(0, colon).c_str());
    value = std::atof(text.substr(colon + 1).c_str());
  }
}

}  // namespace

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment env;
  env.slurm_cpus_per_task = env_positive_int("SLURM_CPUS_PER_TASK");
  env.omp_num_threads = env_positive_int("OMP_NUM_THREADS");
  env.slurm_job_id = env_text("SLURM_JOB_ID");
  env.test_share_gpu = env_text("DDPTRAIN_TEST_SHARE_GPU") == "1";
  env.nccl_hostid = env_text("NCCL_HOSTID");
  env.test_no_host_sync = env_text("DDPTRAIN_TEST_NO_HOST_SYNC") == "1";
  // "R:VALUE"; anything else leaves every rank alone.
  read_rank_and_value("DDPTRAIN_TEST_SLOW_RANK", env.test_slow_rank, env.test_slow_ms);
  read_rank_and_value("DDPTRAIN_TEST_SLOW_PHASES", env.test_slow_phase_rank,
                      env.test_slow_phase_ms);
  read_rank_and_value("DDPTRAIN_TEST_HOLD_PHASES", env.test_hold_phase_rank,
                      env.test_hold_phase_ms);
  double skip_step = 0;
  read_rank_and_value("DDPTRAIN_TEST_SKIP_ALL_REDUCE", env.test_skip_rank, skip_step);
  env.test_skip_step = static_cast<int64_t>(skip_step);
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
