// Fuzz target: the checkpoint readers. A damaged checkpoint is found by train.resume = auto
// (latest_checkpoint), loaded whole into a training run's state (load_checkpoint: model, optimizer,
// EMA, RNG, loop counters) and loaded as weights only by predict and eval (load_model_weights,
// preferring the EMA). Input: the checkpoint's bytes, as checkpoints/step_00000030.h5 (seeds:
// checkpoints of kDeck + kOverrides, written by tests/fuzz/make_corpus.sh).
#include <torch/torch.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "comm/make_communicator.hpp"
#include "comm/watched_world.hpp"
#include "config/parse_config.hpp"
#include "fuzz_support.hpp"
#include "io/checkpoint.hpp"
#include "run/training_run.hpp"
#include "runtime/job.hpp"
#include "runtime/mpi_env.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"

#ifndef DDPTRAIN_FUZZ_INPUTS_DIR
#error "DDPTRAIN_FUZZ_INPUTS_DIR: the inputs/ directory of the source tree"
#endif

namespace {

// The run whose checkpoints the seeds are: make_corpus.sh trains the same deck and overrides.
const std::vector<std::string> kOverrides{
    "--data.samples=256",      "--data.features=8",        "--data.classes=3",
    "--data.teacher_hidden=4", "--model.hidden=8",         "--train.batch_size=8",
    "--train.ema_decay=0.9",   "--data.val_fraction=0.25", "--run.dir=unused"};

// What a training run holds, built as `ddptrain train` builds it, once per process.
struct Run {
  ddpt::Config config;
  ddpt::Job job;
  ddpt::WatchedWorld world;
  std::unique_ptr<ddpt::Communicator> comm;
  ddpt::DataSplits data;
  std::unique_ptr<ddpt::Model> model;
  std::unique_ptr<ddpt::TrainingRun> training;
  ddpt::CheckpointRegistry state;
  ddpt::CheckpointContents contents;
};

Run* the_run = nullptr;

void set_up(int* argc, char*** argv) {
  new ddpt::MpiEnv(argc, argv);  // never finalised: libFuzzer exits without returning
  // Open MPI traps these signals to print its own stack; libFuzzer installs its handler only where
  // none is set, and without it a crash leaves no input behind.
  for (const int signal : {SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV}) std::signal(signal, SIG_DFL);
  std::vector<std::string> args{std::string(DDPTRAIN_FUZZ_INPUTS_DIR) + "/quickstart.cfg"};
  args.insert(args.end(), kOverrides.begin(), kOverrides.end());
  auto* run = new Run;
  run->config = ddpt::parse_config(args);
  run->job = ddpt::set_up_job(run->config.train.threads);
  run->world = ddpt::watch_world(MPI_COMM_WORLD, run->config.dist.timeout_s);
  run->comm = ddpt::make_communicator(run->config.ddp.backend, run->job.device.device,
                                      MPI_COMM_WORLD, run->world.watchdog.get());
  torch::manual_seed(static_cast<uint64_t>(run->config.run.seed));
  run->data = ddpt::make_datasets(run->config.data, run->config.run.seed);
  run->model = ddpt::make_model(run->config.model, run->data.train->info());
  const ddpt::ShardingPlan sharding =
      ddpt::plan_sharding(run->config, run->comm->size(), run->comm->device());
  run->training = std::make_unique<ddpt::TrainingRun>(
      ddpt::run_options(run->config, run->comm->size()),
      ddpt::RunParts{*run->comm, sharding, *run->world.group, *run->model, *run->data.train,
                     run->data.val.get(), run->world.watchdog.get()});
  run->training->register_state(run->state);
  run->contents = {run->model->named_parameters(), run->model->named_buffers(),
                   run->config.resolved_text, &run->state};
  the_run = run;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  ddpt::fuzz::quiet_logging();
  torch::set_num_threads(1);
  set_up(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string run_dir = [] {
    std::filesystem::create_directories(ddpt::fuzz::scratch_dir() + "/run/checkpoints");
    return ddpt::fuzz::scratch_dir() + "/run";
  }();
  const std::string path = ddpt::fuzz::write_input(data, size, "run/checkpoints/step_00000030.h5");
  Run& run = *the_run;
  ddpt::fuzz::run_under_contract([&] {
    const std::string found = ddpt::latest_checkpoint(run_dir);
    (void)found;  // "" for a file that does not say it is complete
  });
  ddpt::fuzz::run_under_contract([&] { ddpt::load_checkpoint(path, run.contents, 0, 1); });
  ddpt::fuzz::run_under_contract([&] {
    ddpt::load_model_weights(path, run.contents.params, run.contents.buffers, /*prefer_ema=*/true);
  });
  return 0;
}
