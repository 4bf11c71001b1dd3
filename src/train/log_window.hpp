// The steps since the last row of metrics.h5's /train (one row every log.every steps): this rank's
// summed loss over them, how many there were and how many were skipped, and the skipped steps of
// the whole run. Checkpoints keep it, so a run resumed between two rows writes the same next row,
// bit for bit, as the run that was never stopped.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace ddpt {

struct LogWindow {
  double loss_sum = 0;        // this rank's losses of the counted steps, summed in step order
  int64_t steps = 0;          // steps since the last row, skipped ones included
  int64_t skipped = 0;        // of those, skipped for non-finite gradients or a loss spike
  int64_t skipped_total = 0;  // skipped steps since the run began (across resumes)

  // Starts the next row (skipped_total goes on).
  void next_row() {
    loss_sum = 0;
    steps = 0;
    skipped = 0;
  }

  // As one float64 row per rank, for the checkpoint's /loop/log_window [ranks, 4].
  torch::Tensor to_row() const;
  // From the checkpoint's rows: this rank's own row when the world size is unchanged; otherwise
  // the mean of the saved ranks' loss sums, which keeps the mean over ranks that the row reports.
  static LogWindow from_rows(const torch::Tensor& rows, int rank, int world_size);
};

}  // namespace ddpt
