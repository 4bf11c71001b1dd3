#include "step/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "optim/optimizer.hpp"
#include "optim/optimizer_state.hpp"
#include "step/task_loss.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace ddpt {

namespace {

// The model's values and device before the engine is built. ZeRO-3 (`sharded`): the trainable
// parameters reach the device a unit at a time as they are sharded (ddp/sharded_parameters.hpp),
// so that no device holds the whole model, and a model built with its values deferred
// (initial_values()) gets them a unit at a time there too; frozen parameters get theirs now, from
// `source` where it holds them. Without ZeRO-3 every parameter gets its values now, and the whole
// model goes to the device.
void place_model(Model& model, bool sharded, torch::Device device, ParameterSource* source) {
  if (!sharded) {
    model.materialize(model.named_parameters());
    model.to(device);
    return;
  }
  std::vector<NamedTensor> frozen;
  for (auto& p : model.named_parameters()) {
    if (!p.tensor.requires_grad()) frozen.push_back(p);
  }
  model.materialize(frozen);
  if (source != nullptr) {
    torch::NoGradGuard no_grad;
    for (const NamedTensor& p : frozen) {
      if (!source->holds(p.name)) continue;
      torch::Tensor values = torch::empty({p.tensor.numel()}, torch::kFloat);
      source->read(p.name, 0, values);
      p.tensor.copy_(values.view(p.tensor.sizes()));
    }
  }
  move_all_but_trainable(model, device);
}

// RAII: the engine tells `laps` of its waits for the other ranks while this lives.
class WaitsObserved {
 public:
  WaitsObserved(DataParallel& engine, PhaseLaps& laps) : engine_(engine) {
    engine_.observe_waits(&laps);
  }
  ~WaitsObserved() { engine_.observe_waits(nullptr); }
  WaitsObserved(const WaitsObserved&) = delete;
  WaitsObserved& operator=(const WaitsObserved&) = delete;

 private:
  DataParallel& engine_;
};

}  // namespace

Trainer::Trainer(const TrainerOptions& options, const ShardingPlan& sharding, Communicator& comm,
                 Model& model, const Dataset& data, FaultInjector& faults, ParameterSource* source)
    : options_(options),
      sharding_(sharding),
      comm_(comm),
      model_(model),
      data_(data),
      faults_(faults),
      info_(data.info()),
      schedule_(options_.schedule),
      precision_(usable_precision(options_.precision, comm.device())) {
  for (auto& p : model_.named_parameters()) {
    if (p.tensor.requires_grad()) trainable_.push_back(p);
  }
  place_model(model_, sharding.parameters_sharded(), comm_.device(), source);
  DataParallelOptions engine;
  engine.bucket_mb = options_.bucket_mb;
  engine.first_bucket_mb = options_.first_bucket_mb;
  engine.sharding = sharding;
  engine.block_prefixes = model_.unit_prefixes();
  engine.used_on_some_ranks = model_.conditional_parameters();
  engine.shared_memory = options_.shared_memory;
  engine.materialize = [this](const std::vector<NamedTensor>& params) {
    model_.materialize(params);
  };
  engine.source = source;
  engine_ = std::make_unique<DataParallel>(trainable_, model_.named_buffers(), comm_, engine);
  if (ShardedParameters* units = engine_->sharded_parameters()) {
    sharded_model_ = std::make_unique<ShardedModel>(model_, *units);
    sharded_weights_ =
        std::make_unique<ShardedWeights>(trainable_, units->shard_plan(), units->shards());
    running_ = sharded_model_.get();
  }
  optimizer_ = make_distributed_optimizer(options_.optimizer, trainable_, engine_->reducer());
  lr_ = options_.schedule.peak;
  // After the broadcast: every rank starts its average from rank 0's parameters (ZeRO-3: from
  // its shard of them).
  if (options_.ema_decay > 0) {
    const ShardedParameters* units = engine_->sharded_parameters();
    ema_ = units ? std::make_unique<Ema>(trainable_, units->shard_plan(), units->shards(),
                                         options_.ema_decay)
                 : std::make_unique<Ema>(trainable_, options_.ema_decay);
  }
  gate_ = std::make_unique<GradientGate>(options_.gate, precision_ == Precision::kFp16, comm_,
                                         engine_->reducer(), optimizer_->gated_on_device());
  check_output_fits();
  running_->train(true);
}

void Trainer::check_output_fits() {
  // One forward of the first two rows in evaluation mode (no dropout, no batch-norm update), so a
  // model that disagrees with its data stops the run before anything is written.
  torch::NoGradGuard no_grad;
  running_->train(false);
  const Batch probe = data_.get(torch::arange(std::min<int64_t>(2, data_.size()), torch::kLong));
  task_loss(info_, running_->forward(probe.inputs.to(comm_.device())),
            probe.targets.to(comm_.device()));
}

std::optional<torch::Tensor> Trainer::train_step(int64_t step, BatchPrefetcher& batches,
                                                 PhaseLaps& laps, int64_t& skipped_total) {
  const int64_t accum = options_.grad_accum;
  // A wait for the other ranks in forward or backward (ZeRO-3's gathers, the reductions) is comm
  // wait: the phases keep this rank's own work.
  const WaitsObserved observed(*engine_, laps);
  engine_->zero_grad();
  engine_->sync_buffers();
  laps.end(&StepSplit::zero_sync);
  torch::Tensor step_loss = torch::zeros({}, torch::TensorOptions().device(comm_.device()));
  for (int64_t micro = 0; micro < accum; ++micro) {
    // Pinned on CUDA devices: from pageable memory a copy is synchronous whatever non_blocking
    // says; from pinned memory it is a DMA that overlaps the GPU's work.
    const Batch batch = batches.next(step, micro);
    laps.end(&StepSplit::data);
    // Mean over the micro-batch, divided by the micro-step count: the accumulated gradient is
    // the gradient of the mean loss over the rank's whole share of the global batch.
    const torch::Tensor loss = batch_loss(batch) / static_cast<double>(accum);
    if (micro == 0) faults_.in_forward();
    laps.end(&StepSplit::forward);
    backward(loss, micro == accum - 1 ? BackwardKind::kStepEnd : BackwardKind::kMicroStep);
    step_loss += loss.detach();
    laps.end(&StepSplit::backward);
  }
  // What follows, up to whichever return, is the update.
  struct UpdateLap {
    PhaseLaps& laps;
    ~UpdateLap() { laps.end(&StepSplit::update); }
  } update_lap{laps};
  // Every rank makes the same decision here, and skips the step together.
  if (!gate_->admit(step, step_loss, skipped_total)) return std::nullopt;
  lr_ = schedule_.lr_at(step) * gate_->lr_factor();
  set_learning_rate(optimizer_->optimizer(), lr_);
  optimizer_->step();
  if (ema_) ema_->update(gate_->found_inf());
  return gate_->counted_loss(step_loss);
}

void Trainer::trial_step(int64_t batch) {
  engine_->zero_grad();
  // The first real step allocates the optimizer's state (AdamW: two moments per value): hold that
  // much now, so a batch that fits leaves room for it.
  const int64_t missing =
      planned_optimizer_state_bytes(options_.optimizer, optimizer_->updated_values()) -
      ddpt::optimizer_state_bytes(optimizer_->optimizer());
  torch::Tensor held;
  if (missing > 0) {
    held =
        torch::empty({missing}, torch::TensorOptions().dtype(torch::kByte).device(comm_.device()));
  }
  backward(batch_loss(data_.get(torch::arange(batch, torch::kLong))), BackwardKind::kLocal);
}

torch::Tensor Trainer::batch_loss(const Batch& batch) {
  const torch::Tensor inputs = batch.inputs.to(comm_.device(), /*non_blocking=*/true);
  const torch::Tensor targets = batch.targets.to(comm_.device(), /*non_blocking=*/true);
  const AutocastScope autocast(precision_, comm_.device());
  if (options_.loss_chunk > 0 && info_.task == Task::kNextToken) {
    if (std::optional<torch::Tensor> loss =
            running_->chunked_loss(inputs, targets, options_.loss_chunk)) {
      return *loss;
    }
  }
  return task_loss(info_, running_->forward(inputs).to(torch::kFloat), targets);
}

void Trainer::backward(const torch::Tensor& loss, BackwardKind kind) {
  engine_->backward(gate_->loss_scaled() ? loss * gate_->loss_scale() : loss, kind);
}

std::optional<torch::Tensor> Trainer::step(int64_t step, BatchPrefetcher& batches, PhaseLaps& laps,
                                           int64_t& skipped_total) {
  try {
    return train_step(step, batches, laps, skipped_total);
  } catch (const c10::OutOfMemoryError& error) {
    // The allocator's message runs over several lines (the sizes, then advice meant for
    // Python users); its first line says how much was asked for.
    std::string cuda = error.what_without_backtrace();
    cuda = cuda.substr(0, cuda.find('\n'));
    throw OutOfMemoryError(fmt::format(
        "out of GPU memory in step {} at train.batch_size = {} per rank (train.grad_accum = {}): "
        "lower train.batch_size (raise train.grad_accum to keep the global batch); {}",
        step + 1, options_.batch, options_.grad_accum, cuda));
  }
}

double Trainer::grad_norm() const {
  return gate_->row_norm();
}

std::vector<torch::Tensor> Trainer::ema_averages() {
  std::vector<torch::Tensor> averages;
  if (!ema_) return averages;
  const EmaWeightsInUse averaged = averaged_weights();
  const auto whole = whole_parameters();
  for (const auto& p : trainable_) averages.push_back(p.tensor.detach().clone());
  return averages;
}

void Trainer::register_state(CheckpointRegistry& registry) {
  registry.add(*optimizer_);
  if (ema_) registry.add(*ema_);
  gate_->register_state(registry);
}

TrainerFacts Trainer::facts() const {
  TrainerFacts facts;
  facts.precision = precision_;
  if (gate_->loss_scaled()) facts.loss_scale = gate_->loss_scale();
  facts.trainable_tensors = trainable_.size();
  const Reducer& reducer = engine_->reducer();
  facts.buckets = reducer.buckets().size();
  facts.buckets_in_shared_memory = reducer.buckets_in_shared_memory();
  facts.parameters_shared = engine_->parameters_shared();
  facts.sharding = sharding_;
  for (const auto& bucket : reducer.buckets()) facts.bucketed_values += bucket.numel;
  for (const auto& p : model_.named_parameters()) {
    facts.parameter_bytes += p.tensor.numel() * static_cast<int64_t>(p.tensor.element_size());
  }
  facts.held_parameter_bytes = facts.parameter_bytes;
  if (const ShardedParameters* units = engine_->sharded_parameters()) {
    facts.units_in_shared_memory = units->gathers_in_shared_memory();
    for (const auto& p : trainable_) {
      facts.held_parameter_bytes -=
          p.tensor.numel() * static_cast<int64_t>(p.tensor.element_size());
    }
    facts.held_parameter_bytes += units->held_bytes();
    facts.largest_unit_bytes = units->largest_unit_bytes();
    facts.root_unit_bytes = units->root_unit_bytes();
  }
  facts.gradient_bytes = reducer.held_bytes();
  facts.planned_gradient_bytes = reducer.planned_bytes();
  facts.schedule = schedule_.describe();
  facts.spike_lr_factor = gate_->lr_factor();
  facts.optimizer_state_bytes = ddpt::optimizer_state_bytes(optimizer_->optimizer());
  facts.optimizer_values = optimizer_->updated_values();
  facts.planned_optimizer_state_bytes =
      ddpt::planned_optimizer_state_bytes(options_.optimizer, facts.optimizer_values);
  facts.planned_whole_optimizer_state_bytes =
      ddpt::planned_optimizer_state_bytes(options_.optimizer, facts.bucketed_values);
  return facts;
}

}  // namespace ddpt
