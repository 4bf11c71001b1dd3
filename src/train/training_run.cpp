#include "train/training_run.hpp"

#include <fmt/format.h>

#include "config/batch_size.hpp"
#include "util/log.hpp"
#include "util/stop_signal.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

TrainingRun::TrainingRun(const Config& config, Communicator& comm, Model& model,
                         const DataSplits& data, Watchdog& watchdog)
    : config_(config),
      val_(data.val),
      watchdog_(watchdog),
      stop_vote_(MPI_COMM_WORLD, &watchdog),
      trainer_(config, comm, model, *data.train),
      early_stopping_(config.train),
      cuda_rng_(comm.device()),
      eval_batch_(eval_batch_size(config, comm.size())) {}

void TrainingRun::register_state(CheckpointRegistry& registry) {
  trainer_.register_state(registry);
  if (early_stopping_.enabled()) registry.add(early_stopping_);
  registry.add(rng_);
  registry.add(cuda_rng_);  // writes nothing on CPUs
}

RunReport TrainingRun::run(RunOutput& output) {
  RunReport report;
  Trainer::Callbacks callbacks;
  // Reports name the step in progress; the stop vote and checkpoint of step k belong to step k.
  callbacks.on_step_begin = [&](int64_t step) { watchdog_.set_step(step); };
  callbacks.on_record = [&](const StepRecord& record) { output.record(record); };
  callbacks.on_step_end = [&](int64_t done) { after_step(done, output, report); };
  report.summary = trainer_.run(callbacks);
  wait_for_background_write(output, report);  // the run ends with its last checkpoint written
  return report;
}

void TrainingRun::wait_for_background_write(RunOutput& output, RunReport& report) {
  const Watchdog::Scope watched = watchdog_.watch("background checkpoint write");
  const std::optional<CheckpointWritten> written = output.wait_for_checkpoint();
  if (!written) return;
  report.checkpoints.write_s += written->write_s;
  spdlog::info("checkpoint written: {} (in the background, {:.3f} s)", written->path,
               written->write_s);
}

bool TrainingRun::checkpoint_due(int64_t done) const {
  const int64_t every = config_.checkpoint.every;
  return every > 0 && (done % every == 0 || done == config_.train.steps);
}

EvalResult TrainingRun::evaluate(int64_t done, RunOutput& output, RunReport& report) {
  const EvalResult result = trainer_.evaluate(*val_, eval_batch_);
  output.record_eval(done, result);
  if (!report.best_eval || result.loss < report.best_eval->first.loss) {
    report.best_eval = std::make_pair(result, done);
  }
  spdlog::info("eval at step {}: {} ({} samples)", done, describe_eval(result, val_->info().task),
               result.samples);
  return result;
}

void TrainingRun::after_step(int64_t done, RunOutput& output, RunReport& report) {
  const bool checkpoint = checkpoint_due(done);
  const bool eval_due = (config_.eval.every > 0 && done % config_.eval.every == 0) ||
                        (checkpoint && config_.checkpoint.keep_best);
  std::optional<double> eval_loss;
  if (eval_due) eval_loss = evaluate(done, output, report).loss;
  // The eval loss is reduced, so every rank reaches the same decision here.
  const bool early_stop = eval_loss && early_stopping_.should_stop(*eval_loss);
  if (early_stop) {
    spdlog::info(
        "early stop at step {}: no improvement of the validation loss by more than {} "
        "in {} evaluations (train.patience)",
        done, config_.train.min_delta, early_stopping_.evals_without_improvement());
    trainer_.request_stop();
  }
  // SIGUSR1/SIGTERM on any rank: every rank stops after this step, with a checkpoint to continue
  // from (after the evaluation above, so the resumed run sees what this one saw).
  report.stop_signal = stop_vote_.agree(pending_stop_signal());
  const bool interrupted = report.stop_signal != 0 && done < config_.train.steps;
  if (interrupted) {
    mark_stopping();
    spdlog::info("{} received: stopping after step {} with a checkpoint",
                 signal_name(report.stop_signal), done);
    trainer_.request_stop();
  }
  const bool stopping_early = (early_stop && config_.checkpoint.every > 0) || interrupted;
  if (!checkpoint && !stopping_early) {
    if (config_.checkpoint.every > 0) output.prepare_checkpoint_memory();  // once; cheap after
    return;
  }
  const Stopwatch stalled;
  wait_for_background_write(output, report);  // one write at a time
  const double waited_s = stalled.seconds();
  const Watchdog::Scope watched = watchdog_.watch(fmt::format("checkpoint write at step {}", done));
  const CheckpointWritten written = output.checkpoint(done, trainer_.epoch_of(done - 1), eval_loss);
  const double stall_s = stalled.seconds();
  report.last_checkpoint = written.path;
  ++report.checkpoints.count;
  report.checkpoints.stall_s += stall_s;
  report.checkpoints.write_s += written.write_s;
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

}  // namespace ddpt
