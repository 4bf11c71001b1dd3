// The block rank 0 prints when `train` starts: the job, then what will be trained and how.
#pragma once

#include <string>

#include "runtime/job.hpp"
#include "setup/training_setup.hpp"

namespace ddpt {

// The "is my job set up right" lines (printed by rank 0): versions, launcher, ranks and nodes,
// devices, threads, the backend and the kernels chosen. The banner's head, and `ddptrain info`.
std::string describe_job(const Job& job, const std::string& backend);

// Logs the banner of `setup`'s run (rank 0's log, like every spdlog line).
void log_run_banner(const TrainingSetup& setup);

}  // namespace ddpt
