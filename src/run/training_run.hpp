// One training run: the loop over the steps, and what happens after each of them on the schedule
// the deck sets (as LAMMPS' Output keeps next_dump and next_restart):
//   metrics row every log.every steps and at the last step (the loss averaged over the ranks);
//   evaluation  every eval.every steps, and before each checkpoint with checkpoint.keep_best;
//   early stop  after an evaluation, once train.patience evaluations in a row did not improve;
//   stop vote   every step: SIGUSR1/SIGTERM on any rank stops every rank after the same step;
//   checkpoint  every checkpoint.every steps, at the last step, and when the run stops early.
// The Trainer does each step; the RunMeter keeps the clocks, the row in progress and the display.
// What the run writes goes through RunOutput (io/run_files: metrics.h5 and the checkpoints), so
// this layer decides when and the io layer decides how.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "comm/host_group.hpp"
#include "comm/stop_vote.hpp"
#include "comm/watchdog.hpp"
#include "config/choices.hpp"
#include "data/distributed_sampler.hpp"
#include "ddp/sharding_plan.hpp"
#include "run/early_stopping.hpp"
#include "run/run_meter.hpp"
#include "run/run_result.hpp"
#include "run/straggler_watch.hpp"
#include "state/checkpointed.hpp"
#include "state/rng_state.hpp"
#include "step/trainer.hpp"
#include "util/fault_injector.hpp"

namespace ddpt {

struct CheckpointWritten {
  std::string path;
  double write_s = 0;          // writing the file, renaming it, moving the links, pruning old ones
  bool in_background = false;  // checkpoint.async: still being written (write_s not known yet)
};

class RunOutput {
 public:
  virtual ~RunOutput() = default;
  // Every rank, for each progress record and each evaluation (rank 0 keeps them).
  virtual void record(const StepRecord& record) = 0;
  virtual void record_eval(int64_t step, const EvalResult& result) = 0;
  // Collective: writes the checkpoint of `step`, with the validation loss at that step if there
  // is one (checkpoint.async: starts writing it in the background).
  virtual CheckpointWritten checkpoint(int64_t step, int64_t epoch,
                                       std::optional<double> eval_loss) = 0;
  // Collective: waits for the checkpoint being written in the background, if any, and returns
  // what it wrote.
  virtual std::optional<CheckpointWritten> wait_for_checkpoint() = 0;
  // Once the run's state is complete (after a step: optimizers make their state in their first
  // step), ahead of the first checkpoint: checkpoint.async starts allocating, in the background,
  // the host memory that checkpoint will copy into, so its stall is a copy, not page faults.
  virtual void prepare_checkpoint_memory() = 0;
};

// What a run trains, on which ranks. References: they outlive the run.
// What the run reads of the deck: setup/run_options.hpp maps the deck onto it (the deck's
// defaults are there, not here).
struct RunOptions {
  // The trainer's; its steps, batch and micro-steps are the run's too.
  TrainerOptions step;
  int64_t checkpoint_every = 0;  // checkpoint.every: steps between checkpoints; 0: at the end only
  bool keep_best = false;        // checkpoint.keep_best: an evaluation at every checkpoint
  int64_t eval_every = 0;        // eval.every: steps between evaluations; 0: none
  int64_t eval_batch = 1;        // rows per rank per evaluation batch (eval.batch_size, resolved)
  int64_t log_every = 10;        // log.every: steps between metrics rows
  ProgressChoice progress = ProgressChoice::kAuto;  // log.progress
  EarlyStoppingOptions early_stopping;              // train.patience, train.min_delta
  int64_t seed = 0;                                 // run.seed: the sampler's order
  int64_t data_prefetch = 0;                        // data.prefetch: batches made ahead
  double straggler_factor = 0;                      // dist.straggler_factor
};

struct RunParts {
  Communicator& comm;     // the gradients' ranks and device
  ShardingPlan sharding;  // what ZeRO shards over them (setup/sharding.hpp)
  HostGroup& group;       // the same ranks, for the stop vote and the summary's step times
  Model& model;
  const Dataset& train;
  const Dataset* val = nullptr;  // evaluation data, if the deck has any
  Watchdog* watchdog = nullptr;  // told the step in progress; null: nothing is watched
  // A test's faults (util/fault_injector.hpp), handed on to the trainer; none by default.
  FaultInjector* faults = &no_faults();
  // ZeRO-3, model.init: where the trainer takes the parameters' values, each rank its own shard
  // (models/parameter_source.hpp); null: the model's own.
  ParameterSource* initial_values = nullptr;
};

// Checkpointed itself: /scheduler and /data (the position, a function of the step) and the
// metrics row in progress (/loop/log_window, per rank).
class TrainingRun : public Checkpointed {
 public:
  // Collective: builds the trainer (which broadcasts rank 0's model) and the stop vote.
  TrainingRun(const RunOptions& options, const RunParts& parts);
  // Every stateful part of the run, in the order checkpoints write them.
  void register_state(CheckpointRegistry& registry);
  // Continue after `steps_done` steps (the state has been loaded from a checkpoint).
  void resume_at(int64_t steps_done);
  // ZeRO-3: the trainable parameters' part of checkpoints (Trainer::sharded_weights); else null.
  CheckpointedWeights* sharded_weights() { return trainer_.sharded_weights(); }
  const RunOptions& options() const { return options_; }
  const Trainer& trainer() const { return trainer_; }
  Trainer& trainer() { return trainer_; }
  // Collective: runs to train.steps, or to the step after which every rank agreed to stop, then
  // gathers every rank's step times. `step_done`, if given, is called after each optimizer step
  // with the number of steps done, before anything else happens after it (for tests and tools
  // that watch the run step by step).
  RunResult run(RunOutput& output, const std::function<void(int64_t)>& step_done = {});

  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  // The step checks made on the device since the last settle (train.step_checks): their skipped
  // steps into the log window.
  void settle_checks(int64_t done);
  // Collective: the metrics row up to step `done` (the loss averaged over the ranks), recorded
  // and shown.
  void write_row(int64_t done, RunOutput& output);
  // Collective: evaluation, early stopping, the stop vote and the checkpoint after step `done`;
  // true when the run stops after it.
  bool after_step(int64_t done, RunOutput& output, RunResult& result);
  // Collective: evaluates (with the moving average of the weights, where there is one) and
  // records the result.
  EvalResult run_evaluation(int64_t done, RunOutput& output, RunResult& result);
  // Collective: SIGUSR1/SIGTERM on any rank; true when the run stops after step `done`.
  bool stop_signal_agreed(int64_t done, RunResult& result);
  bool checkpoint_due(int64_t done) const;
  // Collective: writes the checkpoint of step `done` and accounts for it.
  void write_checkpoint(int64_t done, std::optional<double> eval_loss, RunOutput& output,
                        RunResult& result);
  // Collective: waits for a background checkpoint write and accounts for it.
  void wait_for_background_write(RunOutput& output, RunResult& result);

  const RunOptions options_;  // the parts below keep references into it
  Communicator& comm_;
  HostGroup& group_;
  const Dataset& train_;
  const Dataset* val_;
  Watchdog* watchdog_;
  FaultInjector& faults_;
  StopVote stop_vote_;
  DistributedSampler sampler_;
  Trainer trainer_;
  RunMeter meter_;
  EarlyStopping early_stopping_;
  CpuRngState rng_;
  CudaRngState cuda_rng_;
  int64_t eval_batch_;
  StragglerWatch stragglers_;
  int64_t steps_done_ = 0;
};

}  // namespace ddpt
