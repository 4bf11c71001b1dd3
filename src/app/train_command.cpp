// ddptrain train DECK: parses the deck, builds the job, the data, the model and the run, runs it
// and reports. What happens when is train/training_run.hpp's; which files is io/run_files.hpp's.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "app/commands.hpp"
#include "app/job.hpp"
#include "app/memory_check.hpp"
#include "app/run_banner.hpp"
#include "app/run_summary.hpp"
#include "comm/make_communicator.hpp"
#include "config/parse_config.hpp"
#include "data/make_datasets.hpp"
#include "io/run_files.hpp"
#include "models/freeze.hpp"
#include "models/make_model.hpp"
#include "train/batch_size_search.hpp"
#include "train/training_run.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/stop_signal.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

// Evaluation needs validation data: a deck that asks for it without naming any is wrong.
void check_validation_split(const Config& config, const DataSplits& data) {
  if (data.val) return;
  const char* wanted = config.eval.every > 0         ? "eval.every"
                       : config.checkpoint.keep_best ? "checkpoint.keep_best"
                                                     : nullptr;
  if (wanted) {
    throw ConfigError(std::string("option '") + wanted +
                      "' needs validation data: set data.val_fraction, or name validation "
                      "datasets (data.val_inputs/val_targets, data.val_tokens)");
  }
}

RunDescription describe_run(const Config& config, const Job& job, const Communicator& comm,
                            Task task) {
  RunDescription run;
  run.version = ddptrain_version();
  run.world_size = comm.size();
  run.nodes = job.topology.node_count;
  run.device = job.device.device.str();
  run.backend = comm.backend_name();
  run.config = config.resolved_text;
  run.task = task;
  return run;
}

// The summary, and the exit code: 0, or kStopped when a signal stopped the run early.
int report(const Config& config, const DatasetInfo& info, const RunReport& run, int64_t resume_step,
           const std::string& metrics_path, const TrainerFacts& end, HostGroup& group) {
  RunOutcome outcome;
  outcome.summary = &run.summary;
  outcome.resume_step = resume_step;
  outcome.best_eval = run.best_eval;
  outcome.metrics_path = metrics_path;
  outcome.optimizer_state_bytes = end.optimizer_state_bytes;
  outcome.optimizer_sharded = end.optimizer_sharded;
  outcome.checkpoints = run.checkpoints;
  outcome.ranks = gather_rank_steps(group, run.summary.split);  // collective
  const int64_t end_step = resume_step + run.summary.steps;
  if (run.stop_signal != 0 && end_step < config.train.steps) {
    outcome.stopped_by = signal_name(run.stop_signal);
  }
  spdlog::info("{}", run_summary_text(config, info, outcome));
  if (outcome.stopped_by.empty()) return 0;
  spdlog::info(
      "stopped by {} at step {} of {}; {} holds the state; run the same command with "
      "train.resume = auto to continue (exit code {})",
      outcome.stopped_by, end_step, config.train.steps, run.last_checkpoint,
      static_cast<int>(ExitCode::kStopped));
  return static_cast<int>(ExitCode::kStopped);
}

}  // namespace

int train_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const Config config = parse_config(args);
  const Job job = set_up_job(config);
  check_one_rank_per_gpu(job);
  if (config.train.deterministic) {
    // cuBLAS is deterministic only with a fixed workspace; LibTorch refuses the first GEMM on a
    // GPU without this setting. Read when the first cuBLAS handle is made, so set it before.
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    at::globalContext().setDeterministicAlgorithms(true, false);
  }
  std::unique_ptr<Communicator> comm =
      make_communicator(config.ddp.backend, job.device.device, MPI_COMM_WORLD, job.watchdog.get());

  // Memory is checked before anything large is allocated: synthetic data are made in memory from
  // the deck alone, so before make_datasets; a data file is read batch by batch, so after it, from
  // the shape make_datasets read (not opening the file a second time).
  const bool synthetic =
      config.data.type != DataType::kHdf5 && config.data.type != DataType::kTokens;
  if (synthetic) check_host_memory(config, deck_data_info(config.data), job);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));  // same initial model on all ranks
  const DataSplits data = make_datasets(config.data, config.run.seed);
  check_validation_split(config, data);
  const DatasetInfo info = data.train->info();
  if (!synthetic) check_host_memory(config, info, job);
  std::unique_ptr<Model> model = make_model(config.model, info);
  const FreezeCount freeze = freeze_parameters(*model, config.model.freeze);
  // From here on, train.batch_size = auto is a number (the deck's text in run.config still says
  // auto).
  const Config found = with_batch_size_found(config, *comm, *job.group, *model, *data.train);
  TrainingRun run(found, *comm, *model, data, *job.watchdog);  // last check of the deck

  CheckpointRegistry state;
  run.register_state(state);
  // Every parameter, frozen ones too: the checkpoint is the whole model.
  RunFiles files(found,
                 {model->named_parameters(), model->named_buffers(), config.resolved_text, &state},
                 *job.group);
  int64_t resume_step = 0;
  const std::string resume_path = files.checkpoint_to_resume();
  if (!resume_path.empty()) {
    const Watchdog::Scope watched = job.watchdog->watch("checkpoint read of " + resume_path);
    resume_step = files.load(resume_path);
    run.resume_at(resume_step);
  }

  files.prepare_run_dir();  // only now is anything written
  const TrainerFacts facts = run.facts();
  log_run_banner({found, job, *comm, *model, data, freeze, facts, resume_step, resume_path});
  if (mpi.world_rank() == 0) {
    files.open_metrics(describe_run(found, job, *comm, info.task), resume_step);
  }
  const RunReport result = run.run(files);
  return report(found, info, result, resume_step, files.metrics_path(), run.facts(), *job.group);
}

}  // namespace ddpt
