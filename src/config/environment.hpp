// What the launcher (SLURM, Open MPI) and the user's shell tell us through the environment.
// Read here, once; the layers below receive plain values.
#pragma once

#include <optional>
#include <string>

namespace ddpt {

struct LaunchEnvironment {
  std::optional<int> slurm_cpus_per_task;  // SLURM_CPUS_PER_TASK
  std::optional<int> omp_num_threads;      // OMP_NUM_THREADS
  std::string slurm_job_id;                // SLURM_JOB_ID, empty outside SLURM
  std::string launcher;                    // "slurm", "mpirun" or "none"
  std::string nccl_hostid;                 // NCCL_HOSTID
};

LaunchEnvironment read_launch_environment();

// The variable `name`'s value, "" when unset.
std::string environment_text(const char* name);

}  // namespace ddpt
