// run.dir/metrics.h5, written by rank 0 (DESIGN.md, "metrics.h5"): root attributes describing
// the run, and in /train one row per log interval in equal-length 1-D datasets. Each row is
// flushed as it is written, so a running or killed job's file opens in h5py with every row.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "h5/h5_file.hpp"
#include "h5/h5_series.hpp"
#include "train/trainer.hpp"

namespace ddpt {

struct RunDescription {
  std::string version;
  int64_t world_size = 1;
  int64_t nodes = 1;
  std::string device;   // "cpu", "cuda:0"
  std::string backend;  // "mpi", "nccl"
  std::string config;   // the resolved deck
};

class MetricsWriter {
 public:
  // The /train datasets, in the order of their columns.
  static const std::vector<std::string>& train_columns();

  // Creates `path` (rank 0 only: it is opened from this process alone).
  MetricsWriter(const std::string& path, const RunDescription& run);
  // A resumed run: reopens `path` if it exists, keeping the rows up to `resume_step` and dropping
  // later ones (which the resumed run writes again); otherwise creates it.
  static std::unique_ptr<MetricsWriter> create_or_resume(const std::string& path,
                                                         const RunDescription& run,
                                                         int64_t resume_step);
  // Appends one row to every /train dataset and flushes the file.
  void append(const StepRecord& record);

 private:
  MetricsWriter(H5File file, int64_t resume_step);  // reopen for a resumed run

  H5File file_;
  H5Id train_;
  H5Id eval_;
  std::vector<H5Series> train_series_;
};

}  // namespace ddpt
