// The files of a training run in run.dir: metrics.h5 (rank 0) and the checkpoints (all ranks,
// collectively), written when run/training_run.hpp says so.
#pragma once

#include <future>
#include <memory>
#include <string>

#include "comm/host_group.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_writer_thread.hpp"
#include "io/metrics_writer.hpp"
#include "run/training_run.hpp"

namespace ddpt {

// What the run's files read of the deck: setup/run_options.hpp maps the deck onto it (the deck's
// defaults are there, not here).
struct RunFilesOptions {
  std::string dir;                 // run.dir
  std::string resume = "none";     // train.resume: none, auto or a checkpoint
  int64_t log_every = 1;           // log.every: metrics.h5's rows
  Retention retention;             // checkpoint.keep, checkpoint.keep_best
  bool async_checkpoints = false;  // checkpoint.async: written by a thread from a host copy
  std::string deck_path;           // config.cfg's first line names it ("" : defaults)
  std::string resolved_text;       // config.cfg: the resolved deck
};

class RunFiles : public RunOutput {
 public:
  // `contents`: the model and the registry of the run's state that checkpoints save and load.
  // Checkpoints are collective over `group`.
  RunFiles(const RunFilesOptions& options, CheckpointContents contents, HostGroup& group);

  // train.resume: "" for a fresh start, else the checkpoint to continue from.
  std::string checkpoint_to_resume() const;
  // Every rank: loads the checkpoint `path` into the run's state; returns its step.
  int64_t load(const std::string& path);
  // Collective, after any checkpoint was loaded (nothing is written before): rank 0 makes
  // run.dir, writes config.cfg (the resolved deck) into it, opens log.txt there and creates
  // metrics.h5 (a run resumed at `resume_step` keeps its rows up to that step). Every rank learns
  // whether run.dir worked, so a run.dir that is read-only, not ours or full is one clean error on
  // every rank (ConfigError, exit 2) before training starts, not a failure of rank 0 alone that
  // leaves the others waiting.
  void open(const MetricsHeader& header, int64_t resume_step);
  std::string metrics_path() const;

  void record(const StepRecord& record) override;
  void record_eval(int64_t step, const EvalResult& result) override;
  CheckpointWritten checkpoint(int64_t step, int64_t epoch,
                               std::optional<double> eval_loss) override;
  std::optional<CheckpointWritten> wait_for_checkpoint() override;
  void prepare_checkpoint_memory() override;

 private:
  const RunFilesOptions options_;
  CheckpointContents contents_;
  HostGroup& group_;
  std::unique_ptr<MetricsWriter> metrics_;  // rank 0 only
  // checkpoint.async only; after metrics_, so it is destroyed (finishing its write) first.
  std::unique_ptr<CheckpointWriterThread> writer_;
  std::shared_ptr<StateSnapshot> last_snapshot_;  // its host memory is reused by the next
  std::future<std::vector<torch::Tensor>> first_host_memory_;  // for the first snapshot
};

}  // namespace ddpt
