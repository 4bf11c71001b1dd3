#include "run/run_meter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

namespace ddpt {
namespace {

// Steps left out of the steady-state throughput: allocator and thread-pool warm-up.
constexpr int64_t kMaxWarmupSteps = 5;

std::string progress_line(const StepRecord& record, int64_t last_step) {
  const int steps_width = static_cast<int>(std::to_string(last_step).size());
  return fmt::format(
      "step {:>{}}/{}  epoch {}  loss {:.5f}  samples/s {:.0f}  step {:.1f} ms  "
      "comm wait {:.2f} ms  data wait {:.2f} ms{}",
      record.step, steps_width, last_step, record.epoch, record.loss, record.samples_per_s,
      record.step_time_s * 1e3, record.comm_wait_s * 1e3, record.data_wait_s * 1e3,
      record.skipped_steps > 0 ? fmt::format("  skipped {}", record.skipped_steps) : "");
}

}  // namespace

RunMeter::RunMeter(int64_t last_step, int64_t log_every, const c10::Device& device)
    : last_step_(last_step), log_every_(log_every), on_cpu_(device.is_cpu()), gpu_laps_(device) {}

void RunMeter::resume_at(int64_t steps_done) {
  first_step_ = steps_done;
  // A checkpoint at a row's step was saved before that row was written: the row is in metrics.h5.
  if (steps_done % log_every_ == 0) window_.next_row();
}

void RunMeter::start(ProgressStyle style, double global_batch) {
  global_batch_ = global_batch;
  warmup_steps_ = std::min(kMaxWarmupSteps, std::max<int64_t>(0, last_step_ - first_step_) / 5);
  display_ = std::make_unique<ProgressDisplay>(style, first_step_, last_step_, global_batch,
                                               warmup_steps_);
  total_.reset();
  steady_.reset();
  row_ = RowTiming();
}

void RunMeter::begin_step(int64_t step) {
  if (step - first_step_ != warmup_steps_) return;
  steady_.reset();
  split_ = StepSplit();
  gpu_laps_.discard();
  gpu_split_ = StepSplit();
  gpu_compute_before_ = 0;
  gpu_wait_before_ = 0;
}

void RunMeter::end_step(int64_t done, const std::optional<torch::Tensor>& loss,
                        const PhaseLaps& laps) {
  if (loss) {
    window_.add_loss(*loss);
  } else {
    ++window_.skipped;
  }
  ++window_.steps;
  row_.comm_wait += laps.waited_seconds();
  row_.data_wait += laps.data_seconds();
  row_.compute += laps.compute_seconds();
  ++row_.steps;
  display_->step_done(done);
}

double RunMeter::row_loss() const {
  const int64_t counted = window_.steps - window_.skipped;
  return counted > 0 ? window_.loss_sum_value() / static_cast<double>(counted)
                     : std::numeric_limits<double>::quiet_NaN();
}

void RunMeter::end_row(StepRecord& record) {
  gpu_laps_.collect(gpu_split_);  // the row's read-back waited for the GPU: its marks are passed
  const double seconds = row_.clock.seconds();
  const auto steps = static_cast<double>(row_.steps);
  record.step_time_s = seconds / steps;
  record.samples_per_s = global_batch_ * steps / seconds;
  record.data_wait_s = row_.data_wait / steps;
  // As the summary's split: timed on the GPU where the GPU's laps are (there the waits for the
  // other ranks are the compute stream's), else the host's.
  double compute = row_.compute;
  double comm_wait = row_.comm_wait;
  if (gpu_laps_.enabled() && gpu_split_.on_gpu) {
    const double so_far = gpu_split_.forward + gpu_split_.backward;
    compute = so_far - gpu_compute_before_;
    gpu_compute_before_ = so_far;
    comm_wait = gpu_split_.comm_wait - gpu_wait_before_;
    gpu_wait_before_ = gpu_split_.comm_wait;
  }
  record.compute_s = compute / steps;
  record.comm_wait_s = comm_wait / steps;
  records_.push_back(record);
}

void RunMeter::show_row(const StepRecord& record) {
  display_->record(record.loss, progress_line(record, last_step_));
  row_ = RowTiming();
  window_.next_row();
}

void RunMeter::finish(int64_t steps, RunResult& result) {
  display_->finish();  // the terminal on a fresh line before anything else is printed
  result.records = records_;
  result.first_step = first_step_;
  result.steps = steps;
  result.seconds = total_.seconds();
  result.warmup_steps = warmup_steps_;
  add_steady_figures(result, steady_.seconds());
}

void RunMeter::add_steady_figures(RunResult& result, double steady_s) {
  const int64_t steady_steps = result.steps - result.warmup_steps;
  result.steady_samples_per_s =
      steady_steps > 0 ? global_batch_ * static_cast<double>(steady_steps) / steady_s : 0.0;
  if (steady_steps > 0) {
    result.split = split_;
    result.split.total = steady_s;
    result.split.steps = steady_steps;
    gpu_laps_.collect(gpu_split_);
    if (gpu_laps_.enabled() && gpu_split_.on_gpu) {
      result.split = gpu_split_;
      result.split.steps = steady_steps;
    }
  }
  result.split_is_work = on_cpu_ || result.split.on_gpu;
}

}  // namespace ddpt
