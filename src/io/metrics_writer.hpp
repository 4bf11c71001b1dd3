// run.dir/metrics.h5, written by rank 0: root attributes describing
// the run; in /train one row per log interval and in /eval one row per evaluation, each group a
// set of equal-length 1-D datasets.
//
// The file is in single-writer/multiple-reader (SWMR) mode from the start and every row is
// flushed as it is written, so while the job runs h5py opens it with
// h5py.File(path, "r", swmr=True) and sees every row so far. After a clean end it opens like any
// file; after a kill, open it with swmr=True too (or run `h5clear -s` on it once).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "h5/h5_file.hpp"
#include "h5/h5_row_series.hpp"
#include "h5/h5_series.hpp"
#include "run/evaluate.hpp"
#include "run/run_result.hpp"

namespace ddpt {

// What metrics.h5's root attributes say about the run that writes it.
struct MetricsHeader {
  std::string version;
  int64_t world_size = 1;
  int64_t nodes = 1;
  std::string device;                 // "cpu", "cuda:0"
  std::string backend;                // "mpi", "nccl"
  std::string config;                 // the resolved deck
  Task task = Task::kClassification;  // decides the /eval columns
};

class MetricsWriter {
 public:
  // The /train datasets, in the order of their columns.
  static const std::vector<std::string>& train_columns();
  // The /eval datasets for a task: step, loss, then the task's metrics.
  static std::vector<std::string> eval_columns(Task task);

  // Rank 0 only (the file is opened from this process alone, so its errors are this rank's).
  // A fresh run (resume_step 0) creates `path`. A resumed run keeps the /train rows of an
  // existing `path` up to the last multiple of `log_every` at or before `resume_step` (a row
  // written at a stop between two multiples is written again, whole, by the resumed run, which
  // continues that row from the checkpoint) and the /eval rows up to `resume_step`; the new file
  // replaces the old one by rename, so a crash in between loses nothing.
  static std::unique_ptr<MetricsWriter> create_or_resume(const std::string& path,
                                                         const MetricsHeader& run,
                                                         int64_t resume_step, int64_t log_every);
  // Append one row to every /train (or /eval) dataset and flush the file.
  void append(const StepRecord& record);
  void append_eval(int64_t step, const EvalResult& result);

 private:
  MetricsWriter(const std::string& path, const MetricsHeader& run);
  static std::unique_ptr<MetricsWriter> create_or_resume_file(const std::string& path,
                                                              const MetricsHeader& run,
                                                              int64_t resume_step,
                                                              int64_t log_every);

  H5File file_;
  Task task_;
  std::vector<H5Series> train_series_;
  std::vector<H5Series> eval_series_;
  // More than one rank: /ranks/step and /ranks/compute_s.
  std::optional<H5Series> ranks_step_;
  std::optional<H5RowSeries> ranks_compute_;
};

}  // namespace ddpt
