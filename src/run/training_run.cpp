#include "run/training_run.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "step/no_host_sync.hpp"
#include "util/host_read.hpp"
#include "util/log.hpp"
#include "util/process_identity.hpp"
#include "util/stop_signal.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {
namespace {

SamplerSpec sampler_spec(const RunOptions& options, const Communicator& comm,
                         int64_t dataset_size) {
  SamplerSpec spec;
  spec.dataset_size = dataset_size;
  spec.batch_size = options.step.batch;
  spec.grad_accum = options.step.grad_accum;
  spec.world_size = comm.size();
  spec.rank = comm.rank();
  spec.seed = options.seed;
  return spec;
}

PrefetchSpec prefetch_spec(const RunOptions& options, const Communicator& comm,
                           int64_t first_step) {
  PrefetchSpec spec;
  spec.first_step = first_step;
  spec.end_step = options.step.steps;
  spec.depth = options.data_prefetch;
  spec.pin = comm.device().is_cuda();
  return spec;
}

}  // namespace

TrainingRun::TrainingRun(const RunOptions& options, const RunParts& parts)
    : options_(options),
      comm_(parts.comm),
      group_(parts.group),
      train_(parts.train),
      val_(parts.val),
      watchdog_(parts.watchdog),
      faults_(*parts.faults),
      stop_vote_(parts.group.comm(), parts.watchdog),
      sampler_(sampler_spec(options_, parts.comm, parts.train.size())),
      trainer_(options_.step, parts.sharding, parts.comm, parts.model, parts.train, *parts.faults,
               parts.initial_values),
      meter_(options_.step.steps, options_.log_every, parts.comm.device()),
      early_stopping_(options_.early_stopping),
      cuda_rng_(parts.comm.device()),
      eval_batch_(options_.eval_batch),
      stragglers_(options_.straggler_factor,
                  parts.group.all_gather("ranks' hosts", process_host())) {}

void TrainingRun::register_state(CheckpointRegistry& registry) {
  trainer_.register_state(registry);
  registry.add(*this);
  if (early_stopping_.enabled()) registry.add(early_stopping_);
  registry.add(rng_);
  registry.add(cuda_rng_);  // writes nothing on CPUs
}

void TrainingRun::resume_at(int64_t steps_done) {
  steps_done_ = steps_done;
  meter_.resume_at(steps_done);
}

RunResult TrainingRun::run(RunOutput& output, const std::function<void(int64_t)>& step_done) {
  RunResult result;
  const int64_t first_step = steps_done_;
  const int64_t last_step = options_.step.steps;
  BatchPrefetcher batches(train_, sampler_spec(options_, comm_, train_.size()),
                          prefetch_spec(options_, comm_, first_step));
  // Rank 0 shows progress: a live bar on a terminal, else the periodic lines (log.progress).
  meter_.start(comm_.rank() == 0 ? choose_progress_style(options_.progress, stdout_is_terminal())
                                 : ProgressStyle::kLines,
               static_cast<double>(sampler_.global_batch()));
  int64_t steps = std::max<int64_t>(0, last_step - first_step);
  for (int64_t step = first_step; step < last_step; ++step) {
    meter_.begin_step(step);
    // Reports name the step in progress; the stop vote and checkpoint of step k belong to step k.
    if (watchdog_) watchdog_->set_step(step + 1);
    faults_.step_starts(step + 1);
    PhaseLaps laps = meter_.laps();
    std::optional<torch::Tensor> loss;
    const Stopwatch step_time;
    {
      const NoHostSync no_sync(faults_.host_waits_forbidden(), comm_.device());
      loss = trainer_.step(step, batches, laps, meter_.window().skipped_total);
    }
    // The pace a hang is measured against (comm/watchdog.hpp); a GPU step's time as the host
    // sees it, which a step that waits for its collectives includes.
    if (watchdog_) watchdog_->step_took(step_time.seconds());
    const int64_t done = step + 1;
    meter_.end_step(done, loss, laps);
    steps_done_ = done;
    if (step_done) step_done(done);
    const bool stopping = after_step(done, output, result);
    if (meter_.row_due(done, done == last_step || stopping)) write_row(done, output);
    if (stopping) {
      steps = done - first_step;
      break;
    }
  }
  meter_.finish(steps, result);
  wait_for_background_write(output, result);  // the run ends with its last checkpoint written
  result.ranks = gather_rank_steps(group_, result.split);
  const TrainerFacts end = trainer_.facts();
  result.optimizer_state_bytes = end.optimizer_state_bytes;
  result.parameter_bytes = end.held_parameter_bytes;
  result.largest_unit_bytes = end.largest_unit_bytes;
  result.gradient_bytes = end.gradient_bytes;
  result.peak_memory = peak_memory(comm_.device());
  result.sharding = end.sharding;
  return result;
}

void TrainingRun::settle_checks(int64_t done) {
  const int64_t skipped = trainer_.settle_checks(done);
  meter_.window().skipped += skipped;
  meter_.window().skipped_total += skipped;
}

void TrainingRun::write_row(int64_t done, RunOutput& output) {
  settle_checks(done);
  // The loss line is global: mean over ranks (one small collective per log interval), on the
  // communicator's device: NCCL reduces CUDA tensors only.
  torch::Tensor loss = torch::tensor({meter_.row_loss()}, torch::kDouble).to(comm_.device());
  comm_.all_reduce(loss, ReduceOp::kAvg);
  StepRecord record;
  record.step = done;
  record.epoch = sampler_.epoch_of(done - 1);
  record.loss = read_double(loss);
  record.skipped_steps = meter_.window().skipped_total;
  record.lr = trainer_.lr();
  record.grad_norm = trainer_.grad_norm();
  meter_.end_row(record);
  if (comm_.size() > 1) {
    // One small host collective per row: every rank's forward + backward time, for /ranks/ in
    // metrics.h5 and the straggler warning.
    record.rank_compute_s =
        group_.all_gather("ranks' compute times", std::vector<double>{record.compute_s});
    for (const std::string& line : stragglers_.observe(done, record.rank_compute_s)) {
      if (comm_.rank() == 0) spdlog::warn("{}", line);
    }
  }
  output.record(record);
  meter_.show_row(record);
}

void TrainingRun::wait_for_background_write(RunOutput& output, RunResult& result) {
  const Watchdog::Scope watched = watch_phase(watchdog_, "background checkpoint write");
  const std::optional<CheckpointWritten> written = output.wait_for_checkpoint();
  if (!written) return;
  result.checkpoints.write_s += written->write_s;
  spdlog::info("checkpoint written: {} (in the background, {:.3f} s)", written->path,
               written->write_s);
}

bool TrainingRun::checkpoint_due(int64_t done) const {
  const int64_t every = options_.checkpoint_every;
  return every > 0 && (done % every == 0 || done == options_.step.steps);
}

EvalResult TrainingRun::run_evaluation(int64_t done, RunOutput& output, RunResult& result) {
  EvalResult evaluated;
  {
    const std::string phase = fmt::format("evaluation at step {}", done);
    const Watchdog::Scope watched = watch_phase(watchdog_, phase);
    faults_.phase_starts(phase);
    // Rank 0's batch-norm statistics, which the checkpoint of this step saves: this step changed
    // each rank's on its own data, and the next one starts from rank 0's anyway.
    trainer_.sync_buffers();
    {
      const EmaWeightsInUse averaged = trainer_.averaged_weights();
      evaluated = evaluate(trainer_.model(), *val_, comm_, eval_batch_);
    }
    faults_.phase_ends(phase);
  }
  output.record_eval(done, evaluated);
  if (!result.best_eval || evaluated.loss < result.best_eval->first.loss) {
    result.best_eval = std::make_pair(evaluated, done);
  }
  spdlog::info("eval at step {}: {} ({} samples)", done,
               describe_eval(evaluated, val_->info().task), evaluated.samples);
  return evaluated;
}

bool TrainingRun::stop_signal_agreed(int64_t done, RunResult& result) {
  // SIGUSR1/SIGTERM on any rank: every rank stops after this step, with a checkpoint to continue
  // from (after the evaluation, so the resumed run sees what this one saw).
  result.stop_signal = stop_vote_.agree(pending_stop_signal());
  const bool interrupted = result.stop_signal != 0 && done < options_.step.steps;
  if (interrupted) {
    mark_stopping();
    spdlog::info("{} received: stopping after step {} with a checkpoint",
                 signal_name(result.stop_signal), done);
  }
  return interrupted;
}

bool TrainingRun::after_step(int64_t done, RunOutput& output, RunResult& result) {
  const bool checkpoint = checkpoint_due(done);
  const bool eval_due = (options_.eval_every > 0 && done % options_.eval_every == 0) ||
                        (checkpoint && options_.keep_best);
  std::optional<double> eval_loss;
  if (eval_due) eval_loss = run_evaluation(done, output, result).loss;
  // The eval loss is reduced, so every rank reaches the same decision here.
  const bool early_stop = eval_loss && early_stopping_.should_stop(*eval_loss);
  if (early_stop) {
    spdlog::info(
        "early stop at step {}: no improvement of the validation loss by more than {} "
        "in {} evaluations (train.patience)",
        done, options_.early_stopping.min_delta, early_stopping_.evals_without_improvement());
  }
  const bool interrupted = stop_signal_agreed(done, result);
  const bool stopping_early = (early_stop && options_.checkpoint_every > 0) || interrupted;
  if (checkpoint || stopping_early) {
    write_checkpoint(done, eval_loss, output, result);
  } else if (options_.checkpoint_every > 0) {
    output.prepare_checkpoint_memory();  // once; cheap after
  }
  return early_stop || interrupted;
}

void TrainingRun::write_checkpoint(int64_t done, std::optional<double> eval_loss, RunOutput& output,
                                   RunResult& result) {
  settle_checks(done);  // the window and the optimizer's step counts as the checkpoint saves them
  const Stopwatch stalled;
  wait_for_background_write(output, result);  // one write at a time
  const double waited_s = stalled.seconds();
  const std::string phase = fmt::format("checkpoint write at step {}", done);
  const Watchdog::Scope watched = watch_phase(watchdog_, phase);
  faults_.phase_starts(phase);
  const CheckpointWritten written = output.checkpoint(done, sampler_.epoch_of(done - 1), eval_loss);
  faults_.phase_ends(phase);
  const double stall_s = stalled.seconds();
  result.last_checkpoint = written.path;
  ++result.checkpoints.count;
  result.checkpoints.stall_s += stall_s;
  result.checkpoints.write_s += written.write_s;
  if (written.in_background) {
    // A write still running when the next checkpoint is due: checkpoint.every is shorter than a
    // background write takes (say so: it is the cure).
    const std::string waited =
        waited_s >= 0.001 ? fmt::format(", {:.3f} s of it for the previous write", waited_s) : "";
    spdlog::info("checkpoint: {} (training stopped {:.3f} s{}; writing in the background)",
                 written.path, stall_s, waited);
  } else {
    spdlog::info("checkpoint: {} (training stopped {:.3f} s, write {:.3f} s)", written.path,
                 stall_s, written.write_s);
  }
}

void TrainingRun::save(StateWriter& root) const {
  // The schedule and the sampler are functions of the step: these are for the record.
  const int64_t epoch = steps_done_ > 0 ? sampler_.epoch_of(steps_done_ - 1) : 0;
  const auto scheduler = root.group("scheduler");
  scheduler->scalar("description", trainer_.schedule().describe());
  scheduler->scalar("step", steps_done_);
  const auto data = root.group("data");
  data->scalar("epoch", epoch);
  data->scalar("step", steps_done_);
  root.group("loop")->rank_row("log_window", meter_.window().to_row());
}

void TrainingRun::load(const StateReader& root) {
  if (!root.has("loop")) return;
  const auto loop = root.group("loop");
  if (loop->has("log_window")) {
    meter_.window() =
        LogWindow::from_rows(loop->rank_rows("log_window"), root.rank(), root.world_size());
  }
}

}  // namespace ddpt
