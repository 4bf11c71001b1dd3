#include "ddp/reducer.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cmath>

#include "util/error.hpp"
#include "util/host_read.hpp"
#include "util/sum_of_squares.hpp"

namespace ddpt {

// Post hook of a parameter's AccumulateGrad node: runs once param.grad holds this backward's
// gradient (accumulated into the bucket view).
class ReducerHook final : public torch::autograd::FunctionPostHook {
 public:
  ReducerHook(Reducer* reducer, size_t param) : reducer_(reducer), param_(param) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    reducer_->mark_ready(param_);
    return outputs;
  }

 private:
  Reducer* reducer_;
  size_t param_;
};

// Pre hook of a parameter's AccumulateGrad node: runs before the gradient is added into
// param.grad, so the slot's first gradient of a step can be written instead (Reducer::zero_grad).
class ReducerPreHook final : public torch::autograd::FunctionPreHook {
 public:
  ReducerPreHook(Reducer* reducer, size_t param) : reducer_(reducer), param_(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& inputs) override {
    return reducer_->first_gradient(param_, inputs);
  }

 private:
  Reducer* reducer_;
  size_t param_;
};

namespace {

std::vector<ParamInfo> describe(const std::vector<NamedTensor>& params) {
  std::vector<ParamInfo> info;
  info.reserve(params.size());
  for (const auto& p : params) {
    info.push_back({p.tensor.numel(), static_cast<int64_t>(p.tensor.element_size()),
                    static_cast<int>(p.tensor.scalar_type())});
  }
  return info;
}

// The sum of the squares of `values`' elements, in double, as a 0-dim tensor on their device.
// On the CPU one pass over float or double values without temporaries (util/sum_of_squares.hpp),
// against two full-size double copies for to(kDouble).square().sum().
torch::Tensor squares_in_double(const torch::Tensor& values) {
  if (values.is_cuda()) return values.norm(2, torch::kDouble).square();
  SumOfSquares squares;
  if (values.is_contiguous() && values.scalar_type() == torch::kFloat) {
    squares.add(values.data_ptr<float>(), values.numel());
    return torch::tensor(squares.total(), torch::kDouble);
  }
  if (values.is_contiguous() && values.scalar_type() == torch::kDouble) {
    squares.add(values.data_ptr<double>(), values.numel());
    return torch::tensor(squares.total(), torch::kDouble);
  }
  return values.to(torch::kDouble).square().sum();
}

}  // namespace

Reducer::Reducer(std::vector<NamedTensor> params, Communicator& comm, const ReducerOptions& options)
    : params_(std::move(params)),
      comm_(comm),
      reduction_(options.reduction),
      parameters_shared_(options.parameters_shared &&
                         options.reduction == GradientReduction::kReduceScatter),
      alone_(comm.size() == 1 && options.reduction == GradientReduction::kAllReduce),
      waits_(options.waits) {
  for (const auto& p : params_) {
    if (!p.tensor.requires_grad() || !p.tensor.is_leaf()) {
      throw Error("Reducer: parameter '" + p.name + "' is not a trainable leaf tensor",
                  ExitCode::kInternal, Raised::kAllRanks);
    }
  }
  // ZeRO-2 and 3: buckets borrow their buffers, and a large parameter has a bucket of its own.
  const bool pooled = options.pooled_buckets && sharded();
  plan_ = !options.plan.empty()
              ? options.plan
              : plan_buckets(describe(params_), options.first_bucket_bytes, options.bucket_bytes,
                             /*large_alone=*/pooled);
  if (sharded()) {
    std::vector<int64_t> numels;
    for (const auto& p : params_) numels.push_back(p.tensor.numel());
    shards_ = plan_shards(plan_, numels, comm_.size(), comm_.rank());
  }
  buckets_.resize(plan_.size());
  shard_gradients_.resize(sharded() ? plan_.size() : 0);
  slots_.resize(params_.size());
  ready_.assign(params_.size(), 0);
  if (pooled) {
    allocate_shards(options.wire_dtype);
  } else {
    allocate_buckets(options.wire_dtype, options.backend_buffers);
  }
  install_hooks();
  // Summed in shared memory, a bucket's reduce-scatter also gives its sum of squares (for the
  // norm and the finite check) without another pass or collective.
  reduction_of_buckets_ =
      make_reduction(options.wire_dtype, sharded() && buckets_in_shared_memory());
  trace_.bucket_launched.resize(plan_.size());
  trace_.bucket_started.resize(plan_.size());
}

std::unique_ptr<BucketReduction> Reducer::make_reduction(torch::ScalarType wire_dtype,
                                                         bool squares_in_reduction) {
  // Alone, nothing goes on a wire: the gradients stay as backward made them.
  if (alone_) return own_gradients();
  std::unique_ptr<BucketReduction> sum =
      pooled_                ? pooled_reduce_scatter(comm_, *pooled_, shard_gradients_)
      : !sharded()           ? all_reduce(comm_)
      : squares_in_reduction ? node_reduce_scatter(comm_, shard_gradients_)
                             : reduce_scatter(comm_, shard_gradients_, wire_dtype);
  // A bucket with a wire tensor (ddp.compress) sends that; one without, its buffer.
  return on_the_wire(std::move(sum));
}

void Reducer::allocate_buckets(torch::ScalarType wire_dtype, bool backend_buffers) {
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < plan_.size(); ++b) {
    const BucketSpec& spec = plan_[b];
    const torch::Tensor& first = params_[spec.params.front()].tensor;
    const auto options = first.options().requires_grad(false);
    const int64_t block = sharded() ? shards_[b].block : 0;
    const int64_t numel = sharded() ? block * comm_.size() : spec.numel;
    // Alone, nothing goes on a wire: the gradients stay as backward made them.
    if (alone_) wire_dtype = first.scalar_type();
    const bool reduced_as_it_is = wire_dtype == first.scalar_type();
    buckets_[b].buffer = backend_buffers && reduced_as_it_is ? comm_.allocate_buffer(numel, options)
                                                             : torch::zeros({numel}, options);
    if (wire_dtype != first.scalar_type()) {
      buckets_[b].wire = torch::empty({numel}, options.dtype(wire_dtype));
    }
    if (sharded()) {
      // Summed in shared memory, a rank's block of the sum lands in place, in its own copy.
      shard_gradients_[b] = in_shared_memory(comm_, buckets_[b].buffer)
                                ? buckets_[b].buffer.narrow(0, block * comm_.rank(), block)
                                : torch::zeros({block}, options);
    }
    for (size_t k = 0; k < spec.params.size(); ++k) {
      const size_t i = spec.params[k];
      torch::Tensor& param = params_[i].tensor;
      torch::Tensor view =
          buckets_[b].buffer.narrow(0, spec.offsets[k], param.numel()).view(param.sizes());
      if (param.grad().defined()) view.copy_(param.grad());
      slots_[i] = Slot{b, spec.offsets[k], view};
      param.mutable_grad() = view;
    }
  }
}

void Reducer::allocate_shards(torch::ScalarType wire_dtype) {
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < plan_.size(); ++b) {
    const torch::Tensor& first = params_[plan_[b].params.front()].tensor;
    shard_gradients_[b] = torch::zeros({shards_[b].block}, first.options());
    for (size_t k = 0; k < plan_[b].params.size(); ++k) {
      const size_t i = plan_[b].params[k];
      slots_[i] = Slot{b, plan_[b].offsets[k], torch::Tensor()};  // the buffer's while it has one
      params_[i].tensor.mutable_grad().reset();
    }
  }
  pooled_ = std::make_unique<PooledBuckets>(plan_, shards_, params_, comm_.size(), wire_dtype);
}

void Reducer::install_hooks() {
  awaiting_.assign(params_.size(), 0);  // the slots hold zeros or the gradients copied in
  for (size_t i = 0; i < params_.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i].tensor);
    const uintptr_t key = accumulator->add_post_hook(std::make_unique<ReducerHook>(this, i));
    hooks_.emplace_back(accumulator, key);
    auto pre_hook = std::make_unique<ReducerPreHook>(this, i);
    pre_hooks_.emplace_back(accumulator, pre_hook.get());
    accumulator->add_pre_hook(std::move(pre_hook));
    // Empty slots may share an address with a neighbour; nothing is ever written into them.
    if (slots_[i].view.defined() && slots_[i].view.numel() > 0) {
      param_by_slot_.emplace(slots_[i].view.data_ptr(), i);
    }
  }
}

Reducer::~Reducer() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
  // LibTorch 1.13 has no del_pre_hook: the hook is found by its address.
  for (auto& [accumulator, hook] : pre_hooks_) {
    auto& hooks = accumulator->pre_hooks();
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                               [hook = hook](const auto& h) { return h.get() == hook; }),
                hooks.end());
  }
}

void Reducer::prepare_for_backward(BackwardKind kind) {
  reducing_ = kind == BackwardKind::kStepEnd || (pooled_ && kind == BackwardKind::kMicroStep);
  step_ends_ = kind == BackwardKind::kStepEnd;
  if (!reducing_) return;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].pending = plan_[b].params.size();
    buckets_[b].work.reset();
  }
  next_bucket_ = 0;
  next_completed_ = 0;
  // ZeRO-2: every reduced backward writes its slots afresh in borrowed buffers.
  if (pooled_) std::fill(awaiting_.begin(), awaiting_.end(), 1);
}

void Reducer::mark_ready(size_t param) {
  if (!reducing_) return;
  if (ready_[param]) {
    throw Error("Reducer: parameter '" + params_[param].name +
                    "' received two gradients in one reduced backward",
                ExitCode::kInternal, Raised::kThisRank);
  }
  ready_[param] = 1;
  put_gradient_in_slot(param);
  if (--buckets_[slots_[param].bucket].pending == 0) launch_ready_buckets();
}

// Usually a no-op: param.grad is the bucket view and autograd accumulated into it. If something
// replaced param.grad (an optimizer's zero_grad(set_to_none), user code), copy it in; if the
// parameter has no gradient at all, or none reached its slot since zero_grad(), the slot is zero.
void Reducer::put_gradient_in_slot(size_t param) {
  torch::NoGradGuard no_grad;
  if (pooled_) {
    // The pre hook wrote the gradient; a parameter it did not reach adds zeros.
    if (awaiting_[param]) pooled_slot(param).zero_();
    awaiting_[param] = 0;
    return;
  }
  const torch::Tensor& grad = params_[param].tensor.grad();
  Slot& slot = slots_[param];
  if (!grad.defined()) {
    slot.view.zero_();
  } else if (!grad.is_same(slot.view)) {
    slot.view.copy_(grad);
  } else if (awaiting_[param]) {
    slot.view.zero_();
  }
  awaiting_[param] = 0;
}

torch::autograd::variable_list Reducer::first_gradient(
    size_t param, const torch::autograd::variable_list& inputs) {
  if (pooled_) return pooled_first_gradient(param, inputs);
  if (!awaiting_[param]) return inputs;
  awaiting_[param] = 0;
  torch::NoGradGuard no_grad;
  const torch::Tensor& slot = slots_[param].view;
  const torch::Tensor& incoming = inputs.at(0);
  if (params_[param].tensor.grad().is_same(slot) && incoming.defined() &&
      incoming.layout() == torch::kStrided && incoming.sizes() == slot.sizes() &&
      incoming.scalar_type() == slot.scalar_type() && incoming.device() == slot.device()) {
    slot.copy_(incoming);
    return {torch::Tensor()};  // written: nothing left for the accumulator to add
  }
  slot.zero_();  // the accumulator adds into zeros, as after an eager zero_grad()
  return inputs;
}

bool Reducer::claim_for_overwrite(const torch::Tensor& grad) {
  const auto found = param_by_slot_.find(grad.data_ptr());
  if (found == param_by_slot_.end()) return false;
  const size_t param = found->second;
  if (!awaiting_[param] || !grad.is_same(slots_[param].view)) return false;
  awaiting_[param] = 0;
  return true;
}

void Reducer::launch_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    ReducerBucket& bucket = buckets_[next_bucket_];
    trace_.bucket_launched[next_bucket_] = Clock::now();
    if (gradients_done_) gradients_done_(next_bucket_);
    bucket.work = reduction_of_buckets_->launch(next_bucket_, bucket, bucket.buffer);
    ++next_bucket_;
    // ZeRO-2 and 3: at most a pool's worth of reductions in flight. A bucket of one large
    // parameter borrows no pooled buffer, and would otherwise hold backward's gradient of it until
    // the backward ends, every such bucket at once.
    while (pooled_ && next_bucket_ - next_completed_ > BucketPool::kEntriesBeforeWaiting) {
      complete_reduction(next_completed_++);
    }
  }
}

void Reducer::finalize_backward() {
  if (!reducing_) return;
  trace_.backward_end = Clock::now();
  // Parameters that got no gradient in this backward are reduced with whatever local gradient
  // they hold (zero if none): every rank launches every bucket, so no rank waits forever. Bucket
  // by bucket, each launched once complete, so that under ZeRO-2 a bucket can borrow the buffers
  // of one reduced before it instead of each taking a pool entry of its own.
  for (size_t b = next_bucket_; b < buckets_.size(); ++b) {
    for (const size_t i : plan_[b].params) {
      if (ready_[i]) continue;
      ready_[i] = 1;
      put_gradient_in_slot(i);
      --buckets_[b].pending;
    }
    launch_ready_buckets();
  }
  {
    const RankWaits::Scope waiting(waits_);
    while (next_completed_ < buckets_.size()) complete_reduction(next_completed_++);
    if (const auto squares = reduction_of_buckets_->squares()) {
      gradient_squares_ = *squares;
    } else if (sharded() && step_ends_) {
      reduce_gradient_squares();
    }
  }
  if (!pooled_) {
    for (size_t i = 0; i < params_.size(); ++i) {
      torch::Tensor& param = params_[i].tensor;
      if (!param.grad().is_same(slots_[i].view)) param.mutable_grad() = slots_[i].view;
    }
  }
  reducing_ = false;
}

void Reducer::complete_reduction(size_t b) {
  ReducerBucket& bucket = buckets_[b];
  if (!bucket.work) {  // alone: nothing was launched
    trace_.bucket_started[b] = trace_.bucket_launched[b];
    return;
  }
  {
    // Inside backward too (ZeRO-2: a bucket waiting for a pool entry): a wait for the others.
    const RankWaits::Scope waiting(waits_);
    bucket.work->wait();
  }
  torch::NoGradGuard no_grad;
  reduction_of_buckets_->complete(b, bucket);
  trace_.bucket_started[b] = bucket.work->started_at();
  bucket.work.reset();
}

void Reducer::reduce_gradient_squares() {
  torch::NoGradGuard no_grad;
  torch::Tensor squares =
      torch::zeros({1}, torch::TensorOptions(torch::kDouble).device(comm_.device()));
  for (const torch::Tensor& shard : shard_gradients_) squares += squares_in_double(shard);
  comm_.all_reduce(squares, ReduceOp::kSum);
  gradient_squares_ = read_double(squares);
}

bool Reducer::buckets_in_shared_memory() const {
  return !pooled_ && !buckets_.empty() &&
         std::all_of(buckets_.begin(), buckets_.end(),
                     [this](const ReducerBucket& b) { return in_shared_memory(comm_, b.buffer); });
}

double Reducer::gradient_norm() const {
  if (sharded()) return std::sqrt(gradient_squares_);
  torch::NoGradGuard no_grad;
  // Each bucket's sum of squares in double, read back with one synchronisation (a GPU otherwise
  // idles at each read). On a CPU the values widened to double and summed in one pass; on a GPU
  // the norm computed in double without the widened copy (1 GB for GPT-2 124M), squared.
  std::vector<torch::Tensor> sums;
  for (const auto& bucket : buckets_) sums.push_back(squares_in_double(bucket.buffer));
  if (sums.empty()) return 0.0;
  const torch::Tensor host = read_to_host(torch::stack(sums));
  const double* each = host.data_ptr<double>();
  double squares = 0;
  for (int64_t b = 0; b < host.numel(); ++b) squares += each[b];
  return std::sqrt(squares);
}

bool Reducer::gradients_finite() const {
  if (sharded()) return std::isfinite(gradient_squares_);
  if (buckets_.empty()) return true;
  torch::NoGradGuard no_grad;
  // A sum is finite only if every value is (a NaN or an inf stays in the sum), so one vectorised
  // pass without temporaries answers the common case, far faster than isfinite(...).all(), which
  // was a third of the scaling MLP's step (benchmarks.md, "Choices measured": finite check by
  // sums). A sum that is not finite may still come from finite values that overflow it: then
  // every value is checked.
  std::vector<torch::Tensor> sums;  // one per bucket, read back with one synchronisation
  for (const auto& bucket : buckets_) sums.push_back(bucket.buffer.sum(torch::kFloat));
  if (read_bool(torch::isfinite(torch::stack(sums)).all())) return true;
  std::vector<torch::Tensor> finite;
  for (const auto& bucket : buckets_) finite.push_back(torch::isfinite(bucket.buffer).all());
  return read_bool(torch::stack(finite).all());
}

torch::Tensor Reducer::gradient_norm_on_device() const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> buffers;
  for (const auto& bucket : buckets_) buffers.push_back(bucket.buffer);
  if (buffers.empty()) return torch::zeros({}, torch::TensorOptions(torch::kFloat));
  // One multi-tensor launch for the buckets' norms (fp32 sums of squares, as clip_grad_norm_'s),
  // and one for the norm of those.
  return torch::stack(at::_foreach_norm(buffers, 2)).norm().to(torch::kFloat);
}

void Reducer::scale_gradients(double factor) {
  torch::NoGradGuard no_grad;
  if (sharded()) {
    for (const torch::Tensor& shard : shard_gradients_) shard.mul_(factor);
  } else {
    for (const ReducerBucket& bucket : buckets_) bucket.buffer.mul_(factor);
  }
  gradient_squares_ *= factor * factor;
}

void Reducer::zero_grad() {
  torch::NoGradGuard no_grad;
  reduction_of_buckets_->new_step();
  if (pooled_) {
    // A trial backward (BackwardKind::kLocal) left whole gradients in .grad.
    for (auto& p : params_) p.tensor.mutable_grad().reset();
    return;
  }
  // The slots are written by the next backward. What lies outside every slot (ZeRO-1's padding)
  // is reduced with them and must read zero: nothing writes there now, and the fill (a few
  // values) keeps it so whatever a later change writes.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const int64_t used = plan_[b].numel;
    const int64_t padding = buckets_[b].buffer.numel() - used;
    if (padding > 0) buckets_[b].buffer.narrow(0, used, padding).zero_();
  }
  std::fill(awaiting_.begin(), awaiting_.end(), 1);
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& param = params_[i].tensor;
    if (!param.grad().is_same(slots_[i].view)) param.mutable_grad() = slots_[i].view;
  }
}

}  // namespace ddpt
