// The files of a training run in run.dir: metrics.h5 (rank 0) and the checkpoints (all ranks,
// collectively), written when train/training_run.hpp says so.
#pragma once

#include <mpi.h>

#include <future>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_writer_thread.hpp"
#include "io/metrics_writer.hpp"
#include "train/training_run.hpp"

namespace ddpt {

class RunFiles : public RunOutput {
 public:
  // `contents`: the model and the registry of the run's state that checkpoints save and load.
  RunFiles(const Config& config, CheckpointContents contents, MPI_Comm comm);

  // train.resume: "" for a fresh start, else the checkpoint to continue from.
  std::string checkpoint_to_resume() const;
  // Every rank: loads the checkpoint `path` into the run's state; returns its step.
  int64_t load(const std::string& path);
  // Rank 0: creates metrics.h5, or for a resumed run keeps its rows up to `resume_step`.
  void open_metrics(const RunDescription& run, int64_t resume_step);
  std::string metrics_path() const;

  void record(const StepRecord& record) override;
  void record_eval(int64_t step, const EvalResult& result) override;
  CheckpointWritten checkpoint(int64_t step, int64_t epoch,
                               std::optional<double> eval_loss) override;
  std::optional<CheckpointWritten> wait_for_checkpoint() override;
  void prepare_checkpoint_memory() override;

 private:
  const Config& config_;
  CheckpointContents contents_;
  MPI_Comm comm_;
  int rank_ = 0;  // in comm_
  int size_ = 1;
  std::unique_ptr<MetricsWriter> metrics_;  // rank 0 only
  // checkpoint.async only; after metrics_, so it is destroyed (finishing its write) first.
  std::unique_ptr<CheckpointWriterThread> writer_;
  std::shared_ptr<StateSnapshot> last_snapshot_;  // its host memory is reused by the next
  std::future<std::vector<torch::Tensor>> first_host_memory_;  // for the first snapshot
};

}  // namespace ddpt
