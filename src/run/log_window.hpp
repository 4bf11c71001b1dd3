// The steps since the last row of metrics.h5's /train (one row every log.every steps): this rank's
// summed loss over them, how many there were and how many were skipped, and the skipped steps of
// the whole run. Checkpoints keep it, so a run resumed between two rows writes the same next row,
// bit for bit, as the run that was never stopped.
//
// The loss sum stays on the device the steps ran on, and is read back only for a row or a
// checkpoint: on a GPU each read waits for the step's queued work, and the GPU then idles until
// the CPU has queued the next step's first kernels.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace ddpt {

struct LogWindow {
  // This rank's losses of the counted steps, summed in float64 in step order (the same sum, bit for
  // bit, as adding each loss read back to a double); undefined until a step is counted.
  torch::Tensor loss_sum;
  int64_t steps = 0;          // steps since the last row, skipped ones included
  int64_t skipped = 0;        // of those, skipped for non-finite gradients or a loss spike
  int64_t skipped_total = 0;  // skipped steps since the run began (across resumes)

  // Adds a counted step's loss (a scalar on any device) without reading it back.
  void add_loss(const torch::Tensor& step_loss);
  // The loss sum, read back (0 when no step was counted).
  double loss_sum_value() const;

  // Starts the next row (skipped_total goes on).
  void next_row() {
    loss_sum = torch::Tensor();
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
