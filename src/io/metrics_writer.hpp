// run.dir/metrics.h5, written by rank 0 (DESIGN.md, "metrics.h5"): root attributes describing
// the run, and in /train one row per log interval in equal-length 1-D datasets. Each row is
// flushed as it is written, so a running or killed job's file opens in h5py with every row.
#pragma once

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
  // Appends one row to every /train dataset and flushes the file.
  void append(const StepRecord& record);

 private:
  H5File file_;
  H5Id train_;
  H5Id eval_;
  std::vector<H5Series> train_series_;
};

}  // namespace ddpt
