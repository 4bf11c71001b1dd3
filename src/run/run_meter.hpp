// The run's clocks and counters beside the training itself: each step's phases on the host (and,
// on a GPU, with CUDA events), the loss and timing of the metrics row in progress, the warm-up left
// out of the steady figures, and rank 0's progress display. The training run takes a PhaseLaps for
// each step, tells the meter how the step went, and gets the rows' timings and the summary's
// figures from it.
#pragma once

#include <c10/core/Device.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "run/log_window.hpp"
#include "run/progress_display.hpp"
#include "run/run_result.hpp"
#include "step/phase_laps.hpp"
#include "step/step_split.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

class RunMeter {
 public:
  // A run to `last_step` (train.steps) with a metrics row every `log_every` steps, on `device`.
  RunMeter(int64_t last_step, int64_t log_every, const c10::Device& device);

  // A resumed run: `steps_done` steps are behind it, and window() holds what the checkpoint kept
  // of the row in progress.
  void resume_at(int64_t steps_done);
  // The row in progress (checkpoints keep it, per rank).
  LogWindow& window() { return window_; }
  const LogWindow& window() const { return window_; }

  // Starts the clocks and rank 0's display (`style`), for `global_batch` samples a step.
  void start(ProgressStyle style, double global_batch);
  // Before step `step` (0-based): at the end of the warm-up, the steady clock and laps restart.
  void begin_step(int64_t step);
  // The laps of the step about to run.
  PhaseLaps laps() { return {split_, gpu_laps_}; }
  // After step `done` (1-based): its loss (nullopt: skipped on every rank) and its laps.
  void end_step(int64_t done, const std::optional<torch::Tensor>& loss, const PhaseLaps& laps);
  // Whether step `done` ends a metrics row: every log.every steps, and at the last step.
  bool row_due(int64_t done, bool last) const { return done % log_every_ == 0 || last; }
  // This rank's mean loss over the row's counted steps (NaN when every step of it was skipped).
  double row_loss() const;
  // Adds the row's timings to `record` (after the row's loss was averaged over the ranks, which
  // waited for the GPU) and keeps it.
  void end_row(StepRecord& record);
  // Shows the row (progress line, or the bar's loss) and starts the next one.
  void show_row(const StepRecord& record);
  // The run's figures after `steps` steps: records, time, steady throughput and split.
  void finish(int64_t steps, RunResult& result);

 private:
  // The timing of the steps since the last metrics row (the steps this process ran).
  struct RowTiming {
    Stopwatch clock;
    double comm_wait = 0;
    double data_wait = 0;
    double compute = 0;  // the host's forward + backward, the waits for the other ranks out
    int64_t steps = 0;
  };
  void add_steady_figures(RunResult& result, double steady_s);

  const int64_t last_step_;
  const int64_t log_every_;
  const bool on_cpu_;
  int64_t first_step_ = 0;
  int64_t warmup_steps_ = 0;
  double global_batch_ = 0;
  std::unique_ptr<ProgressDisplay> display_;
  Stopwatch total_;
  Stopwatch steady_;
  // Timing covers the steps this process ran since the last row; the loss covers the whole row
  // (window_), also when it began before a resume.
  RowTiming row_;
  LogWindow window_;
  std::vector<StepRecord> records_;
  StepSplit split_;  // the host's laps
  // On a GPU, the same laps on the GPU (collected at each metrics row): the summary's split there.
  GpuLapTimer gpu_laps_;
  StepSplit gpu_split_;
  double gpu_compute_before_ = 0;  // gpu_split_'s forward + backward at the last row
  double gpu_wait_before_ = 0;     // and its comm wait
};

}  // namespace ddpt
