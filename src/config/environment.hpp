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
  // Tests only: ranks may share a GPU (DDPTRAIN_TEST_SHARE_GPU=1), each with its own NCCL_HOSTID,
  // so that NCCL sees one-GPU hosts and two ranks' logic runs on a machine with one GPU.
  bool test_share_gpu = false;
  std::string nccl_hostid;  // NCCL_HOSTID
  // Tests only: a GPU training step that makes the host wait is an error
  // (DDPTRAIN_TEST_NO_HOST_SYNC=1; train/no_host_sync.hpp).
  bool test_no_host_sync = false;
  // Tests only: rank test_slow_rank sleeps test_slow_ms in each step's forward
  // (DDPTRAIN_TEST_SLOW_RANK=R:MS; the straggler warning's test). -1: no rank.
  int test_slow_rank = -1;
  double test_slow_ms = 0;
  // Tests only: rank test_slow_phase_rank sleeps test_slow_phase_ms inside each evaluation and
  // checkpoint write (DDPTRAIN_TEST_SLOW_PHASES=R:MS; the hang rule's no-false-alarm test).
  int test_slow_phase_rank = -1;
  double test_slow_phase_ms = 0;
  // Tests only: rank test_hold_phase_rank sleeps test_hold_phase_ms at the start of each
  // evaluation and checkpoint write, inside it, before its collectives (DDPTRAIN_TEST_HOLD_PHASES=
  // R:MS; the tests of a rank stopped while the others wait inside a phase).
  int test_hold_phase_rank = -1;
  double test_hold_phase_ms = 0;
  // Tests only: rank test_skip_rank leaves out its first all-reduce of step test_skip_step
  // (DDPTRAIN_TEST_SKIP_ALL_REDUCE=R:STEP; the flight analysis's test).
  int test_skip_rank = -1;
  int64_t test_skip_step = 0;
};

LaunchEnvironment read_launch_environment();

}  // namespace ddpt
