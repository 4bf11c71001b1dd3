// The training loop: batches from the sampler, forward, loss, backward through the data-parallel
// engine (gradients averaged on the last micro-step), optimizer step, progress from rank 0.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "config/batch_size.hpp"
#include "config/config.hpp"
#include "data/batch_prefetcher.hpp"
#include "data/dataset.hpp"
#include "data/distributed_sampler.hpp"
#include "ddp/data_parallel.hpp"
#include "models/model.hpp"
#include "train/autocast.hpp"
#include "train/checkpointed.hpp"
#include "train/distributed_optimizer.hpp"
#include "train/ema.hpp"
#include "train/evaluate.hpp"
#include "train/gradient_gate.hpp"
#include "train/log_window.hpp"
#include "train/lr_schedule.hpp"
#include "train/step_split.hpp"

namespace ddpt {

struct StepRecord {
  int64_t step = 0;  // 1-based: the number of optimizer steps done
  int64_t epoch = 0;
  double loss = 0;            // mean over all ranks and micro-steps
  double lr = 0;              // learning rate of the last step
  double grad_norm = 0;       // global L2 norm of the averaged gradients of the last step, before
                              // clipping
  double samples_per_s = 0;   // global, over the interval since the previous record
  double step_time_s = 0;     // mean over the interval
  double comm_wait_s = 0;     // mean time per step spent waiting for gradient all-reduces
  double data_wait_s = 0;     // mean time per step spent waiting for training batches
  int64_t skipped_steps = 0;  // steps skipped for non-finite gradients so far in this run
};

struct TrainSummary {
  std::vector<StepRecord> records;  // one per log interval
  int64_t steps = 0;
  double seconds = 0;
  int64_t warmup_steps = 0;         // excluded from the steady-state throughput
  double steady_samples_per_s = 0;  // global
  StepSplit split;                  // this rank's steady steps, phase by phase
  // The split times the work itself: the device is the CPU, or the split was timed on the GPU.
  bool split_is_work = false;
};

// What the trainer was built into, for the banner and for tests.
struct TrainerFacts {
  Precision precision = Precision::kFp32;
  std::optional<double> loss_scale;  // fp16: the current dynamic loss scale
  size_t trainable_tensors = 0;
  size_t buckets = 0;
  // Every bucket is summed in memory the node's ranks share (ddp.shared_memory).
  bool buckets_in_shared_memory = false;
  // ZeRO-1 at work: each rank updates its shard (ddp.zero = 1 on more than one rank).
  bool optimizer_sharded = false;
  // ZeRO-1: the node's ranks hold one copy of the parameters in memory they share.
  bool parameters_shared = false;
  int64_t bucketed_values = 0;        // values all-reduced per step (the trainable ones)
  std::string schedule;               // the learning rate schedule in words
  double spike_lr_factor = 1;         // the spike guard's factor on the learning rate so far
  int64_t optimizer_state_bytes = 0;  // held by this rank now (0 before the first step)
  int64_t optimizer_values = 0;       // parameter values this rank updates (ZeRO-1: its shard)
};

// Checkpointed itself: /scheduler and /data (the position, a function of the step) and the
// metrics row in progress (/loop/log_window, per rank).
class Trainer : public Checkpointed {
 public:
  // Collective: moves the model to the communicator's device and broadcasts rank 0's state.
  Trainer(const Config& config, Communicator& comm, Model& model, const Dataset& data);
  struct Callbacks {
    std::function<void(int64_t step)> on_step_begin;      // step: 1-based, about to run
    std::function<void(const StepRecord&)> on_record;     // each progress record (metrics.h5)
    std::function<void(int64_t steps_done)> on_step_end;  // after each optimizer step (checkpoints)
  };
  // Collective: runs optimizer steps from the start step up to train.steps.
  TrainSummary run(const Callbacks& callbacks = {});
  // Called from on_step_end on every rank alike (a collective decision, e.g. early stopping on a
  // reduced eval loss): the step just done is the last one.
  void request_stop() { stop_requested_ = true; }
  // Continue from a checkpoint: `steps_done` optimizer steps are behind us, and log_window()
  // holds what the checkpoint saved of the metrics row in progress.
  void resume_at(int64_t steps_done);

  // Collective: evaluates the model on `data` in batches of `batch` rows per rank, with the
  // moving average of the weights when train.ema_decay is set.
  EvalResult evaluate(const Dataset& data, int64_t batch);
  // Collective: rank 0's buffers to every rank, as the start of each step does.
  void sync_buffers() { engine_->sync_buffers(); }
  // Adds every stateful part (optimizer, moving average, loss scaler, spike guard, this) to
  // `registry`, in the order checkpoints write them.
  void register_state(CheckpointRegistry& registry);
  TrainerFacts facts() const;
  // Local (no communication), for train.batch_size = auto (train/batch_size_search.hpp): forward
  // and backward of the dataset's first `batch` rows, without the all-reduce or an update, while
  // as many bytes as the optimizer's state still lacks are held on the device. Throws
  // c10::OutOfMemoryError if the device's memory does not hold that. Leaves the gradients, the
  // batch-norm statistics and the random generators changed.
  void trial_step(int64_t batch);
  // The moving averages of the trainable parameters (empty unless train.ema_decay > 0).
  std::vector<NamedTensor> ema_averages() const {
    return ema_ ? ema_->averages() : std::vector<NamedTensor>();
  }
  int64_t epoch_of(int64_t step) const { return sampler_.epoch_of(step); }

  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  // Returns this rank's loss for the step, a float scalar on the device and not read back, or
  // nullopt if every rank skipped it (non-finite gradients); NumericalError after
  // train.max_bad_steps skipped steps in a row. Adds the time of its phases to split_.
  std::optional<torch::Tensor> train_step(int64_t step, BatchPrefetcher& batches);
  // This rank's mean loss over `batch` (moved to the device; the forward under autocast).
  torch::Tensor batch_loss(const Batch& batch);
  // Backward of `loss`, scaled by the fp16 loss scale if there is one; `sync`: as
  // DataParallel::backward.
  void backward(const torch::Tensor& loss, bool sync);
  // train_step, with LibTorch's CUDA out-of-memory error rethrown as OutOfMemoryError (exit 6)
  // naming the step and the batch size that did not fit.
  std::optional<torch::Tensor> train_step_or_explain(int64_t step, BatchPrefetcher& batches);
  // Collective: the row of metrics.h5 for the steps since the last one, up to `done`, without
  // the timings (the loss is averaged over ranks).
  StepRecord record_row(int64_t done);
  // At the end of the warm-up: the step split starts again from nothing.
  void discard_warmup_laps();
  // The summary's throughput and step split, from the steps after the warm-up (`steady_s`).
  void add_steady_figures(TrainSummary& summary, double steady_s, double global_batch);
  // ConfigError (exit 2) if the model's output does not fit the data's loss.
  void check_output_fits();

  const Config& config_;
  Communicator& comm_;
  Model& model_;
  const Dataset& data_;
  DatasetInfo info_;
  DistributedSampler sampler_;
  std::unique_ptr<DataParallel> engine_;
  std::vector<NamedTensor> trainable_;
  std::unique_ptr<DistributedOptimizer> optimizer_;
  double lr_ = 0;  // of the last step
  LrSchedule schedule_;
  std::unique_ptr<Ema> ema_;
  Precision precision_;
  std::unique_ptr<GradientGate> gate_;  // after engine_, whose reducer it checks
  bool stop_requested_ = false;
  LogWindow window_;
  int64_t start_step_ = 0;
  int64_t steps_done_ = 0;
  StepSplit split_;  // the host's laps
  // On a GPU, the same laps on the GPU (collected at each metrics row): the summary's split there.
  GpuLapTimer gpu_laps_;
  StepSplit gpu_split_;
  double last_data_wait_ = 0;  // seconds the last step waited for its batches (all micro-steps)
};

}  // namespace ddpt
