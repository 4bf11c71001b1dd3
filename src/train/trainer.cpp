#include "train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "train/optimizer.hpp"
#include "train/optimizer_state.hpp"
#include "train/progress_display.hpp"
#include "train/task_loss.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {
namespace {

// Steps left out of the steady-state throughput: allocator and thread-pool warm-up.
constexpr int64_t kMaxWarmupSteps = 5;

SamplerSpec sampler_spec(const Config& config, const Communicator& comm, int64_t dataset_size) {
  SamplerSpec spec;
  spec.dataset_size = dataset_size;
  spec.batch_size = per_rank_batch(config.train, comm.size());
  spec.grad_accum = config.train.grad_accum;
  spec.world_size = comm.size();
  spec.rank = comm.rank();
  spec.seed = config.run.seed;
  return spec;
}

PrefetchSpec prefetch_spec(const Config& config, const Communicator& comm, int64_t first_step) {
  PrefetchSpec spec;
  spec.first_step = first_step;
  spec.end_step = config.train.steps;
  spec.depth = config.data.prefetch;
  spec.pin = comm.device().is_cuda();
  return spec;
}

// The timing of the steps since the last metrics row (the steps this process ran).
struct RowTiming {
  Stopwatch clock;
  double comm_wait = 0;
  double data_wait = 0;
  int64_t steps = 0;

  void fill(StepRecord& record, double global_batch) const {
    const double seconds = clock.seconds();
    record.step_time_s = seconds / steps;
    record.samples_per_s = global_batch * steps / seconds;
    record.comm_wait_s = comm_wait / steps;
    record.data_wait_s = data_wait / steps;
  }
  void restart() { *this = RowTiming(); }
};

// The phases of one step on both clocks: end(phase) adds the host's time since the last lap to
// the host's split and marks the phase's end on the GPU (GpuLapTimer; nothing on a CPU device).
class PhaseLaps {
 public:
  // Marks the step's start on the GPU: its time since the last step's end is between steps.
  PhaseLaps(StepSplit& host, GpuLapTimer& gpu) : host_(host), gpu_(gpu) { gpu_.lap(nullptr); }
  // Returns the host's seconds.
  double end(double StepSplit::*phase) noexcept {
    const double seconds = timer_.lap();
    host_.*phase += seconds;
    gpu_.lap(phase);
    return seconds;
  }

 private:
  LapTimer timer_;
  StepSplit& host_;
  GpuLapTimer& gpu_;
};

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

Trainer::Trainer(const Config& config, Communicator& comm, Model& model, const Dataset& data)
    : config_(config),
      comm_(comm),
      model_(model),
      data_(data),
      info_(data.info()),
      sampler_(sampler_spec(config, comm, data.size())),
      schedule_(config.optim, config.train.steps),
      precision_(usable_precision(config.train.precision, comm.device())),
      gpu_laps_(comm.device()) {
  model_.to(comm_.device());
  check_output_fits();
  model_.train(true);
  for (auto& p : model_.named_parameters()) {
    if (p.tensor.requires_grad()) trainable_.push_back(p);
  }
  DataParallelOptions options;
  options.bucket_mb = config.ddp.bucket_mb;
  options.first_bucket_mb = config.ddp.first_bucket_mb;
  if (config.ddp.compress != WirePrecision::kNone) {
    options.wire_dtype =
        config.ddp.compress == WirePrecision::kBf16 ? torch::kBFloat16 : torch::kHalf;
  }
  if (optimizer_sharded(config.ddp, comm_.size())) {
    options.reduction = GradientReduction::kReduceScatter;
  }
  options.shared_memory = config.ddp.shared_memory;
  // The moving average swaps itself into the parameters for evaluation, on each rank: with one
  // shared copy the ranks would swap each other's values.
  options.share_parameters = config.train.ema_decay == 0;
  engine_ = std::make_unique<DataParallel>(trainable_, model_.named_buffers(), comm_, options);
  optimizer_ = make_distributed_optimizer(config, trainable_, engine_->reducer());
  lr_ = config.optim.lr;
  // After the broadcast: every rank starts its average from rank 0's parameters.
  if (config.train.ema_decay > 0) ema_ = std::make_unique<Ema>(trainable_, config.train.ema_decay);
  gate_ = std::make_unique<GradientGate>(config, precision_ == Precision::kFp16, comm_,
                                         engine_->reducer());
}

void Trainer::check_output_fits() {
  // One forward of the first two rows in evaluation mode (no dropout, no batch-norm update), so a
  // model that disagrees with its data stops the run before anything is written.
  torch::NoGradGuard no_grad;
  model_.train(false);
  const Batch probe = data_.get(torch::arange(std::min<int64_t>(2, data_.size()), torch::kLong));
  task_loss(info_, model_.forward(probe.inputs.to(comm_.device())),
            probe.targets.to(comm_.device()));
}

void Trainer::resume_at(int64_t steps_done) {
  start_step_ = steps_done;
  steps_done_ = steps_done;
  // A checkpoint at a row's step was saved before that row was written: the row is in metrics.h5.
  if (steps_done % config_.log.every == 0) window_.next_row();
}

std::optional<torch::Tensor> Trainer::train_step(int64_t step, BatchPrefetcher& batches) {
  const int64_t accum = config_.train.grad_accum;
  PhaseLaps laps(split_, gpu_laps_);
  engine_->zero_grad();
  engine_->sync_buffers();
  laps.end(&StepSplit::zero_sync);
  last_data_wait_ = 0;
  torch::Tensor step_loss = torch::zeros({}, torch::TensorOptions().device(comm_.device()));
  for (int64_t micro = 0; micro < accum; ++micro) {
    // Pinned on CUDA devices: from pageable memory a copy is synchronous whatever non_blocking
    // says; from pinned memory it is a DMA that overlaps the GPU's work.
    const Batch batch = batches.next(step, micro);
    last_data_wait_ += laps.end(&StepSplit::data);
    // Mean over the micro-batch, divided by the micro-step count: the accumulated gradient is
    // the gradient of the mean loss over the rank's whole share of the global batch.
    const torch::Tensor loss = batch_loss(batch) / static_cast<double>(accum);
    laps.end(&StepSplit::forward);
    backward(loss, /*sync=*/micro == accum - 1);
    step_loss += loss.detach();
    laps.end(&StepSplit::backward);
  }
  // The wait for the last all-reduces happens inside the last backward call.
  const double comm_wait = engine_->reducer().last_trace().wait_seconds;
  split_.comm_wait += comm_wait;
  split_.backward -= comm_wait;
  // What follows, up to whichever return, is the update.
  struct UpdateLap {
    PhaseLaps& laps;
    ~UpdateLap() { laps.end(&StepSplit::update); }
  } update_lap{laps};
  // Every rank makes the same decision here, and skips the step together.
  if (!gate_->admit(step, step_loss, window_.skipped_total)) return std::nullopt;
  lr_ = schedule_.lr_at(step) * gate_->lr_factor();
  set_learning_rate(optimizer_->optimizer(), lr_);
  optimizer_->step();
  if (ema_) ema_->update();
  return step_loss;
}

void Trainer::trial_step(int64_t batch) {
  engine_->zero_grad();
  // The first real step allocates the optimizer's state (AdamW: two moments per value): hold that
  // much now, so a batch that fits leaves room for it.
  const int64_t missing =
      planned_optimizer_state_bytes(config_.optim, optimizer_->updated_values()) -
      ddpt::optimizer_state_bytes(optimizer_->optimizer());
  torch::Tensor held;
  if (missing > 0) {
    held =
        torch::empty({missing}, torch::TensorOptions().dtype(torch::kByte).device(comm_.device()));
  }
  backward(batch_loss(data_.get(torch::arange(batch, torch::kLong))), /*sync=*/false);
}

torch::Tensor Trainer::batch_loss(const Batch& batch) {
  const torch::Tensor inputs = batch.inputs.to(comm_.device(), /*non_blocking=*/true);
  const torch::Tensor targets = batch.targets.to(comm_.device(), /*non_blocking=*/true);
  const AutocastScope autocast(precision_, comm_.device());
  return task_loss(info_, model_.forward(inputs).to(torch::kFloat), targets);
}

void Trainer::backward(const torch::Tensor& loss, bool sync) {
  engine_->backward(gate_->loss_scaled() ? loss * gate_->loss_scale() : loss, sync);
}

std::optional<torch::Tensor> Trainer::train_step_or_explain(int64_t step,
                                                            BatchPrefetcher& batches) {
  try {
    return train_step(step, batches);
  } catch (const c10::OutOfMemoryError& error) {
    // The allocator's message runs over several lines (the sizes, then advice meant for
    // Python users); its first line says how much was asked for.
    std::string cuda = error.what_without_backtrace();
    cuda = cuda.substr(0, cuda.find('\n'));
    throw OutOfMemoryError(fmt::format(
        "out of GPU memory in step {} at train.batch_size = {} per rank (train.grad_accum = {}): "
        "lower train.batch_size (raise train.grad_accum to keep the global batch); {}",
        step + 1, per_rank_batch(config_.train, comm_.size()), config_.train.grad_accum, cuda));
  }
}

StepRecord Trainer::record_row(int64_t done) {
  // The loss line is global: mean over ranks (one small collective per log interval).
  const int64_t counted = window_.steps - window_.skipped;
  // On the communicator's device: NCCL reduces CUDA tensors only.
  torch::Tensor loss = torch::tensor({counted > 0 ? window_.loss_sum_value() / counted
                                                  : std::numeric_limits<double>::quiet_NaN()},
                                     torch::kDouble)
                           .to(comm_.device());
  comm_.all_reduce(loss, ReduceOp::kAvg);
  StepRecord record;
  record.step = done;
  record.epoch = sampler_.epoch_of(done - 1);
  record.loss = loss.item<double>();
  record.skipped_steps = window_.skipped_total;
  record.lr = lr_;
  record.grad_norm =
      config_.optim.clip > 0 ? gate_->unclipped_norm() : engine_->reducer().gradient_norm();
  return record;
}

TrainSummary Trainer::run(const Callbacks& callbacks) {
  TrainSummary summary;
  const int64_t last_step = config_.train.steps;
  summary.steps = std::max<int64_t>(0, last_step - start_step_);
  summary.warmup_steps = std::min(kMaxWarmupSteps, summary.steps / 5);
  const double global_batch = static_cast<double>(sampler_.global_batch());
  // Rank 0 shows progress: a live bar on a terminal, else the periodic lines (log.progress).
  ProgressDisplay display(comm_.rank() == 0
                              ? choose_progress_style(config_.log.progress, stdout_is_terminal())
                              : ProgressStyle::kLines,
                          start_step_, last_step, global_batch, summary.warmup_steps);

  BatchPrefetcher batches(data_, sampler_spec(config_, comm_, data_.size()),
                          prefetch_spec(config_, comm_, start_step_));
  Stopwatch total;
  Stopwatch steady;
  // Timing covers the steps this process ran since the last row; the loss covers the whole row
  // (window_), also when it began before a resume.
  RowTiming timing;
  for (int64_t step = start_step_; step < last_step; ++step) {
    if (step - start_step_ == summary.warmup_steps) {
      steady.reset();
      discard_warmup_laps();
    }
    if (callbacks.on_step_begin) callbacks.on_step_begin(step + 1);
    if (const std::optional<torch::Tensor> loss = train_step_or_explain(step, batches)) {
      window_.add_loss(*loss);
    } else {
      ++window_.skipped;
    }
    ++window_.steps;
    timing.comm_wait += engine_->reducer().last_trace().wait_seconds;
    timing.data_wait += last_data_wait_;
    ++timing.steps;
    const int64_t done = step + 1;
    steps_done_ = done;
    display.step_done(done);
    if (callbacks.on_step_end) callbacks.on_step_end(done);
    const bool last = done == last_step || stop_requested_;
    if (done % config_.log.every != 0 && !last) continue;

    StepRecord record = record_row(done);
    gpu_laps_.collect(gpu_split_);  // the row's read-back waited for the GPU: its marks are passed
    timing.fill(record, global_batch);
    summary.records.push_back(record);
    if (callbacks.on_record) callbacks.on_record(record);
    display.record(record.loss, progress_line(record, last_step));
    timing.restart();
    window_.next_row();
    if (stop_requested_) {
      summary.steps = done - start_step_;
      break;
    }
  }
  display.finish();  // the terminal on a fresh line before anything else is printed
  summary.seconds = total.seconds();
  add_steady_figures(summary, steady.seconds(), global_batch);
  return summary;
}

void Trainer::discard_warmup_laps() {
  split_ = StepSplit();
  gpu_laps_.discard();
  gpu_split_ = StepSplit();
}

void Trainer::add_steady_figures(TrainSummary& summary, double steady_s, double global_batch) {
  const int64_t steady_steps = summary.steps - summary.warmup_steps;
  summary.steady_samples_per_s = steady_steps > 0 ? global_batch * steady_steps / steady_s : 0.0;
  if (steady_steps > 0) {
    summary.split = split_;
    summary.split.total = steady_s;
    summary.split.steps = steady_steps;
    gpu_laps_.collect(gpu_split_);
    if (gpu_laps_.enabled() && gpu_split_.on_gpu) {
      summary.split = gpu_split_;
      summary.split.steps = steady_steps;
    }
  }
  summary.split_is_work = comm_.device().is_cpu() || summary.split.on_gpu;
}

EvalResult Trainer::evaluate(const Dataset& data, int64_t batch) {
  const EmaWeightsInUse averaged(ema_.get());  // evaluation sees the averaged weights
  return ddpt::evaluate(model_, data, comm_, batch);
}

void Trainer::register_state(CheckpointRegistry& registry) {
  registry.add(*optimizer_);
  if (ema_) registry.add(*ema_);
  gate_->register_state(registry);
  registry.add(*this);
}

TrainerFacts Trainer::facts() const {
  TrainerFacts facts;
  facts.precision = precision_;
  if (gate_->loss_scaled()) facts.loss_scale = gate_->loss_scale();
  facts.trainable_tensors = trainable_.size();
  facts.buckets = engine_->reducer().buckets().size();
  facts.buckets_in_shared_memory = engine_->reducer().buckets_in_shared_memory();
  facts.parameters_shared = engine_->parameters_shared();
  facts.optimizer_sharded = engine_->reducer().sharded();
  for (const auto& bucket : engine_->reducer().buckets()) facts.bucketed_values += bucket.numel;
  facts.schedule = schedule_.describe();
  facts.spike_lr_factor = gate_->lr_factor();
  facts.optimizer_state_bytes = ddpt::optimizer_state_bytes(optimizer_->optimizer());
  facts.optimizer_values = optimizer_->updated_values();
  return facts;
}

void Trainer::save(StateWriter& root) const {
  // The schedule and the sampler are functions of the step: these are for the record.
  const int64_t epoch = steps_done_ > 0 ? sampler_.epoch_of(steps_done_ - 1) : 0;
  const auto scheduler = root.group("scheduler");
  scheduler->scalar("description", schedule_.describe());
  scheduler->scalar("step", steps_done_);
  const auto data = root.group("data");
  data->scalar("epoch", epoch);
  data->scalar("step", steps_done_);
  root.group("loop")->rank_row("log_window", window_.to_row());
}

void Trainer::load(const StateReader& root) {
  if (!root.has("loop")) return;
  const auto loop = root.group("loop");
  if (loop->has("log_window")) {
    window_ = LogWindow::from_rows(loop->rank_rows("log_window"), root.rank(), root.world_size());
  }
}

}  // namespace ddpt
