#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "app/commands.hpp"
#include "app/job.hpp"
#include "app/run_summary.hpp"
#include "config/parse_config.hpp"
#include "data/make_datasets.hpp"
#include "dist/make_communicator.hpp"
#include "dist/stop_vote.hpp"
#include "io/checkpoint.hpp"
#include "io/metrics_writer.hpp"
#include "models/freeze.hpp"
#include "models/make_model.hpp"
#include "train/evaluate.hpp"
#include "train/progress_display.hpp"
#include "train/trainer.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/stop_signal.hpp"

namespace ddpt {
namespace {

// Rank 0 creates run.dir with the resolved deck and starts log.txt there.
void prepare_run_dir(const Config& config, bool rank0) {
  if (!rank0) return;
  std::error_code ec;
  std::filesystem::create_directories(config.run.dir, ec);
  if (ec) throw ConfigError("run.dir '" + config.run.dir + "' cannot be created: " + ec.message());
  std::ofstream deck(std::filesystem::path(config.run.dir) / "config.cfg");
  deck << "# resolved by ddptrain " << ddptrain_version() << " from "
       << (config.deck_path.empty() ? "defaults" : config.deck_path) << "\n"
       << config.resolved_text;
  if (!deck) throw ConfigError("cannot write " + config.run.dir + "/config.cfg");
  add_log_file((std::filesystem::path(config.run.dir) / "log.txt").string());
}

// "1.2 GFLOP": floating-point operations with an SI prefix.
std::string human_flops(double flops) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int k = 0;
  while (flops >= 1000 && k < 5) {
    flops /= 1000;
    ++k;
  }
  return fmt::format("{:.3g} {}FLOP", flops, prefixes[k]);
}

// train.resume: "" for a fresh start, else the checkpoint to continue from.
std::string checkpoint_to_resume(const Config& config) {
  if (config.train.resume == "none") return "";
  if (config.train.resume == "auto") return latest_checkpoint(config.run.dir);
  return config.train.resume;
}

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

}  // namespace

int train_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const Config config = parse_config(args);
  const bool rank0 = mpi.world_rank() == 0;
  const Job job = set_up_job(config);
  if (config.train.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  std::unique_ptr<Communicator> comm =
      make_communicator(config.ddp.backend, job.device.device, MPI_COMM_WORLD, job.watchdog.get());
  Watchdog& watchdog = *job.watchdog;
  StopVote stop_vote(MPI_COMM_WORLD, &watchdog);

  torch::manual_seed(static_cast<uint64_t>(config.run.seed));  // same initial model on all ranks
  const DataSplits data = make_datasets(config.data, config.run.seed);
  check_validation_split(config, data);
  const DatasetInfo info = data.train->info();
  std::unique_ptr<Model> model = make_model(config.model, info);
  const FreezeCount freeze = freeze_parameters(*model, config.model.freeze);

  Trainer trainer(config, *comm, *model, *data.train);  // last check of the deck against the data

  // Early stopping (train.patience): the best validation loss so far and the evaluations since
  // it improved by train.min_delta; checkpointed, so a resumed run keeps counting.
  double best_eval_loss = std::numeric_limits<double>::infinity();
  double evals_without_improvement = 0;

  TrainingState state;
  state.params = model->named_parameters();  // frozen ones too: the checkpoint is the whole model
  state.buffers = model->named_buffers();
  if (trainer.ema()) state.ema = trainer.ema()->averages();
  state.optimizer = &trainer.optimizer();
  state.optimizer_type = config.optim.type;
  state.config = config.resolved_text;
  state.schedule = trainer.schedule().describe();
  state.log_window = &trainer.log_window();
  if (LossScaler* scaler = trainer.loss_scaler()) {
    state.loop.push_back({"loss_scale", &scaler->scale_state()});
    state.loop.push_back({"loss_scale_good_steps", &scaler->good_steps_state()});
  }
  if (config.train.patience > 0) {
    state.loop.push_back({"early_stop_best_loss", &best_eval_loss});
    state.loop.push_back({"early_stop_evals", &evals_without_improvement});
  }
  if (trainer.spike_guard().enabled()) {
    state.loop.push_back({"spike_mean", &trainer.spike_guard().mean_state()});
    state.loop.push_back({"spike_seen", &trainer.spike_guard().seen_state()});
    state.loop.push_back({"spike_lr_factor", &trainer.spike_guard().lr_factor_state()});
  }
  int64_t resume_step = 0;
  const std::string resume_path = checkpoint_to_resume(config);
  if (!resume_path.empty()) {
    const Watchdog::Scope watched = watchdog.watch("checkpoint read of " + resume_path);
    resume_step = load_checkpoint(resume_path, state, comm->rank(), comm->size());
    trainer.resume_at(resume_step);
  }

  prepare_run_dir(config, rank0);  // only now is anything written
  spdlog::info("{}", describe_job(job, comm->backend_name()));
  spdlog::info("  model           : {} ({} parameters)", model->describe(),
               parameter_count(*model));
  if (const double flops = model->forward_flops_per_sample(); flops > 0) {
    spdlog::info("  compute         : {} per sample forward, about {} per training step",
                 human_flops(flops),
                 human_flops(3 * flops *
                             static_cast<double>(per_rank_batch(config.train, comm->size()) *
                                                 config.train.grad_accum * comm->size())));
  }
  spdlog::info("  precision       : {}{}{}", precision_name(trainer.precision()),
               trainer.precision() == Precision::kFp32 ? "" : " autocast (weights, optimizer fp32)",
               trainer.loss_scaler()
                   ? fmt::format(", loss scale {} (dynamic)", trainer.loss_scaler()->scale())
                   : std::string());
  if (freeze.frozen_tensors > 0) {
    spdlog::info("  trainable       : {} values; frozen: {} values in {} tensors ({})",
                 freeze.trainable_values, freeze.frozen_values, freeze.frozen_tensors,
                 config.model.freeze);
  }
  spdlog::info("  data            : {}", data.train->describe());
  if (data.val) spdlog::info("  validation      : {}", data.val->describe());
  const int64_t batch = per_rank_batch(config.train, comm->size());
  spdlog::info("  batch           : {} per rank x {} micro-steps x {} ranks = {} per step", batch,
               config.train.grad_accum, comm->size(),
               batch * config.train.grad_accum * comm->size());
  spdlog::info("  buckets         : {} (first {} MiB, then {} MiB), gradients on the wire in {}",
               trainer.engine().reducer().buckets().size(), config.ddp.first_bucket_mb,
               config.ddp.bucket_mb, config.ddp.compress == "none" ? "fp32" : config.ddp.compress);
  spdlog::info("  optimizer       : {}, weight decay {} (not on biases and norms){}",
               config.optim.type, config.optim.weight_decay,
               config.optim.clip > 0
                   ? fmt::format(", gradients clipped to norm {}", config.optim.clip)
                   : std::string());
  spdlog::info("  learning rate   : {}", trainer.schedule().describe());
  if (!resume_path.empty()) {
    spdlog::info("  resumed         : at step {} from {}", resume_step, resume_path);
  }
  std::unique_ptr<MetricsWriter> metrics;
  const std::string metrics_path = config.run.dir + "/metrics.h5";
  if (rank0) {
    RunDescription run;
    run.version = ddptrain_version();
    run.world_size = comm->size();
    run.nodes = job.topology.node_count;
    run.device = job.device.device.str();
    run.backend = comm->backend_name();
    run.config = config.resolved_text;
    run.task = info.task;
    metrics = MetricsWriter::create_or_resume(metrics_path, run, resume_step, config.log.every);
  }
  Trainer::Callbacks callbacks;
  callbacks.on_record = [&](const StepRecord& record) {
    if (metrics) metrics->append(record);
  };
  const int64_t eval_batch = config.eval.batch_size > 0 ? config.eval.batch_size : batch;
  std::optional<EvalResult> best_eval;  // of this run, for the summary
  int64_t best_eval_step = 0;
  auto run_eval = [&](int64_t done) {
    const EmaWeightsInUse averaged(trainer.ema());  // evaluation sees the averaged weights
    const EvalResult result = evaluate(*model, *data.val, *comm, eval_batch);
    if (metrics) metrics->append_eval(done, result);
    if (result.loss < best_eval_loss - config.train.min_delta) {
      best_eval_loss = result.loss;
      evals_without_improvement = 0;
    } else {
      ++evals_without_improvement;
    }
    if (!best_eval || result.loss < best_eval->loss) {
      best_eval = result;
      best_eval_step = done;
    }
    spdlog::info("eval at step {}: {} ({} samples)", done, describe_eval(result, info.task),
                 result.samples);
    return result;
  };
  const int64_t every = config.checkpoint.every;
  int stop_signal = 0;  // agreed by every rank
  std::string last_checkpoint;
  // Reports name the step in progress; the stop vote and checkpoint of step k belong to step k.
  callbacks.on_step_begin = [&](int64_t step) { watchdog.set_step(step); };
  callbacks.on_step_end = [&](int64_t done) {
    const bool checkpoint_due = every > 0 && (done % every == 0 || done == config.train.steps);
    const bool eval_due = (config.eval.every > 0 && done % config.eval.every == 0) ||
                          (checkpoint_due && config.checkpoint.keep_best);
    std::optional<double> eval_loss;
    if (eval_due) eval_loss = run_eval(done).loss;
    // The eval loss is reduced, so every rank reaches the same decision here.
    const bool stop = config.train.patience > 0 &&
                      evals_without_improvement >= static_cast<double>(config.train.patience);
    if (stop) {
      spdlog::info(
          "early stop at step {}: no improvement of the validation loss by more than {} "
          "in {} evaluations (train.patience)",
          done, config.train.min_delta, evals_without_improvement);
      trainer.request_stop();
    }
    // SIGUSR1/SIGTERM on any rank: every rank stops after this step, with a checkpoint to
    // continue from (after the evaluation above, so the resumed run sees what this one saw).
    stop_signal = stop_vote.agree(pending_stop_signal());
    const bool interrupted = stop_signal != 0 && done < config.train.steps;
    if (interrupted) {
      mark_stopping();
      spdlog::info("{} received: stopping after step {} with a checkpoint",
                   signal_name(stop_signal), done);
      trainer.request_stop();
    }
    if (!checkpoint_due && !(stop && every > 0) && !interrupted) return;
    const Watchdog::Scope watched =
        watchdog.watch(fmt::format("checkpoint write at step {}", done));
    last_checkpoint = save_checkpoint(config.run.dir, done, trainer.epoch_of(done - 1), state,
                                      MPI_COMM_WORLD, config.checkpoint, eval_loss);
    spdlog::info("checkpoint: {}", last_checkpoint);
  };
  const TrainSummary summary = trainer.run(callbacks);
  RunOutcome outcome;
  outcome.summary = &summary;
  outcome.resume_step = resume_step;
  if (best_eval) outcome.best_eval = std::make_pair(*best_eval, best_eval_step);
  outcome.metrics_path = metrics_path;
  const int64_t end_step = resume_step + summary.steps;
  if (stop_signal != 0 && end_step < config.train.steps)
    outcome.stopped_by = signal_name(stop_signal);
  spdlog::info("{}", run_summary_text(config, info, outcome));
  if (outcome.stopped_by.empty()) return 0;
  spdlog::info(
      "stopped by {} at step {} of {}; {} holds the state; run the same command with "
      "train.resume = auto to continue (exit code {})",
      outcome.stopped_by, end_step, config.train.steps, last_checkpoint,
      static_cast<int>(ExitCode::kStopped));
  return static_cast<int>(ExitCode::kStopped);
}

}  // namespace ddpt
