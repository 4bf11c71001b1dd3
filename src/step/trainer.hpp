// The step engine: one optimizer step at a time from the batches it is handed: forward and loss
// under autocast, backward through the data-parallel engine (gradients averaged on the last
// micro-step), the gradient gate, the optimizer step and the moving average. The loop around the
// steps (what runs when, the metrics rows, the clocks) is run/training_run.hpp's.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "config/choices.hpp"
#include "config/ddp_defaults.hpp"
#include "data/batch_prefetcher.hpp"
#include "data/dataset.hpp"
#include "ddp/data_parallel.hpp"
#include "ddp/sharded_model.hpp"
#include "ddp/sharding_plan.hpp"
#include "models/autocast.hpp"
#include "models/model.hpp"
#include "optim/distributed_optimizer.hpp"
#include "optim/ema.hpp"
#include "optim/lr_schedule.hpp"
#include "optim/sharded_weights.hpp"
#include "state/checkpointed.hpp"
#include "step/gradient_gate.hpp"
#include "step/phase_laps.hpp"
#include "util/fault_injector.hpp"

namespace ddpt {

// What the trainer was built into, for the banner and for tests.
struct TrainerFacts {
  Precision precision = Precision::kFp32;
  std::optional<double> loss_scale;  // fp16: the current dynamic loss scale
  size_t trainable_tensors = 0;
  size_t buckets = 0;
  // Every bucket is summed in memory the node's ranks share (ddp.shared_memory).
  bool buckets_in_shared_memory = false;
  // What is sharded at work (no stage on one rank), ZeRO-3's prefetch, the wire's precision.
  ShardingPlan sharding;
  // ZeRO-1 or 2: the node's ranks hold one copy of the parameters in memory they share.
  bool parameters_shared = false;
  // ZeRO-3: every unit gathered into one copy in memory the node's ranks share (ddp.shared_memory).
  bool units_in_shared_memory = false;
  // This rank's: all of them, or under ZeRO-3 its shard of the trainable ones and the frozen ones.
  int64_t held_parameter_bytes = 0;
  // ZeRO-3: the largest block's unit, gathered whole while the block runs; the root unit
  // (embeddings, final norm, head), gathered whole through forward and backward.
  int64_t largest_unit_bytes = 0;
  int64_t root_unit_bytes = 0;
  int64_t bucketed_values = 0;        // values all-reduced per step (the trainable ones)
  std::string schedule;               // the learning rate schedule in words
  double spike_lr_factor = 1;         // the spike guard's factor on the learning rate so far
  int64_t optimizer_state_bytes = 0;  // held by this rank now (0 before the first step)
  int64_t optimizer_values = 0;       // parameter values this rank updates (ZeRO-1: its shard)
  // The optimizer state once every value has taken a step: this rank's, and every rank's together
  // (of the bucketed values).
  int64_t planned_optimizer_state_bytes = 0;
  int64_t planned_whole_optimizer_state_bytes = 0;
  int64_t parameter_bytes = 0;         // every parameter of the model, frozen ones too
  int64_t gradient_bytes = 0;          // this rank's (Reducer::held_bytes)
  int64_t planned_gradient_bytes = 0;  // ... once a backward has run (Reducer::planned_bytes)
};

// What the trainer reads of the deck: setup/run_options.hpp maps the deck onto it (the deck's
// defaults are there, not here).
struct TrainerOptions {
  int64_t steps = 0;       // train.steps
  int64_t batch = 1;       // samples per rank per micro-step (train.batch_size, resolved)
  int64_t grad_accum = 1;  // train.grad_accum
  Precision precision = Precision::kFp32;  // train.precision
  int64_t loss_chunk = 0;                  // train.loss_chunk
  double ema_decay = 0.0;                  // train.ema_decay
  OptimizerSpec optimizer;                 // [optim]'s optimizer
  LrScheduleSpec schedule;                 // [optim]'s schedule
  GateOptions gate;                        // the checks between backward and the optimizer step
  // The gradient buckets' caps and where they are summed (ddp.first_bucket_mb, ddp.bucket_mb,
  // ddp.shared_memory); what else [ddp] says is the sharding plan's.
  double first_bucket_mb = kDefaultFirstBucketMiB;
  double bucket_mb = kDefaultBucketMiB;
  bool shared_memory = true;
};

class Trainer {
 public:
  // Collective: moves the model to the communicator's device and broadcasts rank 0's state.
  // `sharding`: what ZeRO shards on `comm` (setup/sharding.hpp). `faults`: a test's
  // (util/fault_injector.hpp), called inside each step's first forward. `source`: under ZeRO-3,
  // where the parameters it holds take their values from (model.init), each rank reading its own
  // shard of them and the frozen ones whole; null: the model's own.
  Trainer(const TrainerOptions& options, const ShardingPlan& sharding, Communicator& comm,
          Model& model, const Dataset& data, FaultInjector& faults = no_faults(),
          ParameterSource* source = nullptr);

  // Collective: optimizer step `step` (0-based) on the next train.grad_accum micro-batches of
  // `batches`, its phases lapped on `laps`. Returns this rank's loss for the step, a float scalar
  // on the device and not read back, or nullopt if every rank skipped it (non-finite gradients, a
  // loss spike), counted in `skipped_total`; NumericalError after train.max_bad_steps skipped steps
  // in a row; OutOfMemoryError (exit 6) naming the step and the batch size that did not fit.
  // With the checks on the device a skipped step returns a loss of 0 and is counted by
  // settle_checks() instead.
  std::optional<torch::Tensor> step(int64_t step, BatchPrefetcher& batches, PhaseLaps& laps,
                                    int64_t& skipped_total);
  // With train.step_checks on the device: reads the checks since the last settle and returns
  // the steps they skipped (warned of); NumericalError after train.max_bad_steps in a row. Before
  // a metrics row and a checkpoint. 0 with the checks on the host (counted by step()).
  int64_t settle_checks(int64_t done) { return gate_->settle(done); }
  // Of the last step: the learning rate, and the global norm of the averaged gradients before
  // clipping (checks on the device: of the last settled step).
  double lr() const { return lr_; }
  double grad_norm() const;
  const LrSchedule& schedule() const { return schedule_; }
  // The model it trains (on the communicator's device), as forward runs it (ZeRO-3: its blocks
  // gathered as they run).
  Model& model() { return *running_; }
  // Collective under ZeRO-3: every parameter of the model whole while the guard lives; null (and
  // nothing to do) otherwise, where they always are.
  std::unique_ptr<ShardedParameters::Whole> whole_parameters() {
    ShardedParameters* units = engine_->sharded_parameters();
    return units ? std::make_unique<ShardedParameters::Whole>(*units) : nullptr;
  }
  // ZeRO-3: what checkpoints read and write of the trainable parameters (each rank its slices);
  // null otherwise.
  CheckpointedWeights* sharded_weights() { return sharded_weights_.get(); }

  // RAII: the model holds the moving average of its weights (train.ema_decay) while this lives,
  // as evaluation sees them; without a moving average, nothing changes.
  EmaWeightsInUse averaged_weights() { return EmaWeightsInUse(ema_.get()); }
  // Collective: rank 0's buffers to every rank, as the start of each step does.
  void sync_buffers() { engine_->sync_buffers(); }
  // Adds every stateful part (optimizer, moving average, loss scaler, spike guard) to `registry`,
  // in the order checkpoints write them.
  void register_state(CheckpointRegistry& registry);
  TrainerFacts facts() const;
  // Local (no communication), for train.batch_size = auto (run/batch_size_search.hpp): forward
  // and backward of the dataset's first `batch` rows, without the all-reduce or an update, while
  // as many bytes as the optimizer's state still lacks are held on the device. Throws
  // c10::OutOfMemoryError if the device's memory does not hold that. Leaves the gradients, the
  // batch-norm statistics and the random generators changed.
  void trial_step(int64_t batch);
  // Copies of the moving averages of the trainable parameters, whole (empty unless
  // train.ema_decay > 0). Collective: ZeRO-3 gathers them.
  std::vector<torch::Tensor> ema_averages();

 private:
  // step() without the explanation of LibTorch's out-of-memory error.
  std::optional<torch::Tensor> train_step(int64_t step, BatchPrefetcher& batches, PhaseLaps& laps,
                                          int64_t& skipped_total);
  // This rank's mean loss over `batch` (moved to the device; the forward under autocast).
  torch::Tensor batch_loss(const Batch& batch);
  // Backward of `loss`, scaled by the fp16 loss scale if there is one; `sync`: as
  // DataParallel::backward.
  void backward(const torch::Tensor& loss, BackwardKind kind);
  // ConfigError (exit 2) if the model's output does not fit the data's loss.
  void check_output_fits();

  const TrainerOptions options_;  // the parts below keep references into it
  const ShardingPlan sharding_;
  Communicator& comm_;
  Model& model_;
  Model* running_ = &model_;  // model_, or sharded_model_ under ZeRO-3
  const Dataset& data_;
  FaultInjector& faults_;
  DatasetInfo info_;
  std::unique_ptr<DataParallel> engine_;
  std::unique_ptr<ShardedModel> sharded_model_;      // ZeRO-3
  std::unique_ptr<ShardedWeights> sharded_weights_;  // ZeRO-3
  std::vector<NamedTensor> trainable_;
  std::unique_ptr<DistributedOptimizer> optimizer_;
  double lr_ = 0;  // of the last step
  LrSchedule schedule_;
  std::unique_ptr<Ema> ema_;
  Precision precision_;
  std::unique_ptr<GradientGate> gate_;  // after engine_, whose reducer it checks
};

}  // namespace ddpt
