// The block rank 0 prints when `train` starts: the job, then what will be trained and how.
#pragma once

#include <string>

#include "app/job.hpp"
#include "config/config.hpp"
#include "data/make_datasets.hpp"
#include "models/freeze.hpp"
#include "models/model.hpp"
#include "train/trainer.hpp"

namespace ddpt {

struct BannerInputs {
  const Config& config;
  const Job& job;
  const Communicator& comm;
  Model& model;
  const DataSplits& data;
  const FreezeCount& freeze;
  const TrainerFacts& trainer;
  int64_t resume_step = 0;  // with resume_path: where the run continues
  std::string resume_path;
};

// Logs the banner (rank 0's log, like every spdlog line).
void log_run_banner(const BannerInputs& in);

}  // namespace ddpt
