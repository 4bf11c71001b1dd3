// One training run: the trainer's steps, and what happens after each of them on the schedule the
// deck sets (as LAMMPS' Output keeps next_dump and next_restart):
//   evaluation  every eval.every steps, and before each checkpoint with checkpoint.keep_best;
//   early stop  after an evaluation, once train.patience evaluations in a row did not improve;
//   stop vote   every step: SIGUSR1/SIGTERM on any rank stops every rank after the same step;
//   checkpoint  every checkpoint.every steps, at the last step, and when the run stops early.
// What the run writes goes through RunOutput (io/run_files: metrics.h5 and the checkpoints), so
// this layer decides when and the io layer decides how.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "comm/stop_vote.hpp"
#include "comm/watchdog.hpp"
#include "config/config.hpp"
#include "data/make_datasets.hpp"
#include "train/checkpointed.hpp"
#include "train/early_stopping.hpp"
#include "train/rng_state.hpp"
#include "train/trainer.hpp"

namespace ddpt {

struct CheckpointWritten {
  std::string path;
  double write_s = 0;          // writing the file, renaming it, moving the links, pruning old ones
  bool in_background = false;  // checkpoint.async: still being written (write_s not known yet)
};

// Checkpoints of one run and what they cost.
struct CheckpointTimes {
  int64_t count = 0;
  double stall_s = 0;  // training stopped for them, in all
  double write_s = 0;  // their writes took, in all (with synchronous writes: the stall)
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

struct RunReport {
  TrainSummary summary;
  std::optional<std::pair<EvalResult, int64_t>> best_eval;  // this run's best, and its step
  int stop_signal = 0;          // agreed by every rank; nonzero when a signal stopped the run
  std::string last_checkpoint;  // "" if none was written
  CheckpointTimes checkpoints;
};

class TrainingRun {
 public:
  // Collective: builds the trainer (which broadcasts rank 0's model) and the stop vote.
  TrainingRun(const Config& config, Communicator& comm, Model& model, const DataSplits& data,
              Watchdog& watchdog);
  // Every stateful part of the run, in the order checkpoints write them.
  void register_state(CheckpointRegistry& registry);
  // Continue after `steps_done` steps (the state has been loaded from a checkpoint).
  void resume_at(int64_t steps_done) { trainer_.resume_at(steps_done); }
  TrainerFacts facts() const { return trainer_.facts(); }
  // Collective: runs to train.steps, or to the step after which every rank agreed to stop.
  RunReport run(RunOutput& output);

 private:
  // Collective: evaluation, early stopping, the stop vote and the checkpoint after step `done`.
  void after_step(int64_t done, RunOutput& output, RunReport& report);
  // Collective: evaluates and records the result.
  EvalResult evaluate(int64_t done, RunOutput& output, RunReport& report);
  bool checkpoint_due(int64_t done) const;
  // Collective: waits for a background checkpoint write and accounts for it.
  void wait_for_background_write(RunOutput& output, RunReport& report);

  const Config& config_;
  std::shared_ptr<const Dataset> val_;
  Watchdog& watchdog_;
  StopVote stop_vote_;
  Trainer trainer_;
  EarlyStopping early_stopping_;
  CpuRngState rng_;
  CudaRngState cuda_rng_;
  int64_t eval_batch_;
};

}  // namespace ddpt
