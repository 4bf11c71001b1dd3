// The factory of a training run: from the resolved deck, once, every part the train subcommand
// runs, each handed the options it uses: the job (runtime/job.hpp) and its watchdog, the
// communicator, the data, the model (model.freeze applied), the batch size train.batch_size = auto
// finds, the TrainingRun with the state checkpoints keep, and its files in run.dir, with a
// checkpoint loaded when train.resume says so. The train subcommand is then: set it up, run it,
// print the summary.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/watched_world.hpp"
#include "config/config.hpp"
#include "ddp/sharding_plan.hpp"
#include "io/run_files.hpp"
#include "models/freeze.hpp"
#include "models/model.hpp"
#include "run/training_run.hpp"
#include "runtime/job.hpp"
#include "setup/initial_weights.hpp"
#include "setup/make_datasets.hpp"
#include "state/checkpointed.hpp"
#include "util/fault_injector.hpp"

namespace ddpt {

// Its parts refer to each other: made once, in place, and never moved. Members are destroyed in
// reverse order: the files (finishing a background checkpoint write) before the run, the
// communicator before the watchdog that watches it.
struct TrainingSetup {
  TrainingSetup() = default;
  TrainingSetup(const TrainingSetup&) = delete;
  TrainingSetup& operator=(const TrainingSetup&) = delete;

  Config config;  // the deck's, with train.batch_size = auto resolved to a number
  Job job;
  // A test's faults (setup/test_faults.hpp), before the parts that call it: they end first.
  std::unique_ptr<FaultInjector> faults;
  WatchedWorld world;
  std::unique_ptr<Communicator> comm;
  ShardingPlan sharding;  // what ZeRO shards over comm's ranks (setup/sharding.hpp)
  DataSplits data;
  std::unique_ptr<Model> model;
  // ZeRO-3, model.init: the file the trainer reads each rank's slices from, while it is built.
  std::unique_ptr<InitialWeightsSource> initial_weights;
  FreezeCount freeze;
  std::unique_ptr<TrainingRun> run;
  CheckpointRegistry state;  // the run's stateful parts, in the order checkpoints write them
  std::unique_ptr<RunFiles> files;
  int64_t resume_step = 0;  // 0: a fresh start
  std::string resume_path;  // the checkpoint the run continues from, if any
};

// Collective over MPI_COMM_WORLD. Refuses a bad deck (ConfigError, exit 2) before anything is
// written; writes run.dir (config.cfg, log.txt, metrics.h5) last, then calls `ready` (the banner:
// it reaches log.txt).
std::unique_ptr<TrainingSetup> set_up_training(
    const Config& config, const std::function<void(const TrainingSetup&)>& ready);

}  // namespace ddpt
