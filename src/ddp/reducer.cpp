#include "ddp/reducer.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>

#include "util/error.hpp"

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

}  // namespace

Reducer::Reducer(std::vector<NamedTensor> params, Communicator& comm, int64_t first_bucket_bytes,
                 int64_t bucket_bytes, torch::ScalarType wire_dtype)
    : params_(std::move(params)), comm_(comm) {
  for (const auto& p : params_) {
    if (!p.tensor.requires_grad() || !p.tensor.is_leaf()) {
      throw Error("Reducer: parameter '" + p.name + "' is not a trainable leaf tensor",
                  ExitCode::kInternal, Raised::kAllRanks);
    }
  }
  plan_ = plan_buckets(describe(params_), first_bucket_bytes, bucket_bytes);
  buckets_.resize(plan_.size());
  slots_.resize(params_.size());
  ready_.assign(params_.size(), 0);
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < plan_.size(); ++b) {
    const BucketSpec& spec = plan_[b];
    const torch::Tensor& first = params_[spec.params.front()].tensor;
    buckets_[b].buffer = torch::zeros({spec.numel}, first.options().requires_grad(false));
    if (wire_dtype != first.scalar_type()) {
      buckets_[b].wire = torch::empty({spec.numel}, first.options().dtype(wire_dtype));
    }
    for (size_t k = 0; k < spec.params.size(); ++k) {
      const size_t i = spec.params[k];
      torch::Tensor& param = params_[i].tensor;
      torch::Tensor view =
          buckets_[b].buffer.narrow(0, spec.offsets[k], param.numel()).view(param.sizes());
      if (param.grad().defined()) view.copy_(param.grad());
      slots_[i] = Slot{b, view};
      param.mutable_grad() = view;
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i].tensor);
    const uintptr_t key = accumulator->add_post_hook(std::make_unique<ReducerHook>(this, i));
    hooks_.emplace_back(std::move(accumulator), key);
  }
  trace_.bucket_launched.resize(plan_.size());
  trace_.bucket_started.resize(plan_.size());
}

Reducer::~Reducer() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
}

void Reducer::prepare_for_backward(bool sync) {
  sync_ = sync;
  if (!sync) return;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].pending = plan_[b].params.size();
    buckets_[b].work.reset();
  }
  next_bucket_ = 0;
}

void Reducer::mark_ready(size_t param) {
  if (!sync_) return;
  if (ready_[param]) {
    throw Error("Reducer: parameter '" + params_[param].name +
                    "' received two gradients in one synchronised backward",
                ExitCode::kInternal, Raised::kThisRank);
  }
  ready_[param] = 1;
  put_gradient_in_slot(param);
  if (--buckets_[slots_[param].bucket].pending == 0) launch_ready_buckets();
}

// Usually a no-op: param.grad is the bucket view and autograd accumulated into it. If something
// replaced param.grad (an optimizer's zero_grad(set_to_none), user code), copy it in; if the
// parameter has no gradient at all, its slot is zero.
void Reducer::put_gradient_in_slot(size_t param) {
  torch::NoGradGuard no_grad;
  const torch::Tensor& grad = params_[param].tensor.grad();
  Slot& slot = slots_[param];
  if (!grad.defined()) {
    slot.view.zero_();
  } else if (!grad.is_same(slot.view)) {
    slot.view.copy_(grad);
  }
}

void Reducer::launch_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Bucket& bucket = buckets_[next_bucket_];
    trace_.bucket_launched[next_bucket_] = Clock::now();
    // A sum: DataParallel::backward already divided the loss by the world size.
    if (bucket.wire.defined()) {
      bucket.wire.copy_(bucket.buffer);
      bucket.work = comm_.all_reduce_async(bucket.wire, ReduceOp::kSum);
    } else {
      bucket.work = comm_.all_reduce_async(bucket.buffer, ReduceOp::kSum);
    }
    ++next_bucket_;
  }
}

void Reducer::finalize_backward() {
  if (!sync_) return;
  trace_.backward_end = Clock::now();
  // Parameters that got no gradient in this backward are reduced with whatever local gradient
  // they hold (zero if none): every rank launches every bucket, so no rank waits forever.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    ready_[i] = 1;
    put_gradient_in_slot(i);
    --buckets_[slots_[i].bucket].pending;
  }
  launch_ready_buckets();
  const Clock::time_point wait_start = Clock::now();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].work->wait();
    if (buckets_[b].wire.defined()) buckets_[b].buffer.copy_(buckets_[b].wire);
    trace_.bucket_started[b] = buckets_[b].work->started_at();
    buckets_[b].work.reset();
  }
  trace_.wait_seconds = std::chrono::duration<double>(Clock::now() - wait_start).count();
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& param = params_[i].tensor;
    if (!param.grad().is_same(slots_[i].view)) param.mutable_grad() = slots_[i].view;
  }
  sync_ = false;
}

double Reducer::gradient_norm() const {
  torch::NoGradGuard no_grad;
  double squares = 0;
  for (const auto& bucket : buckets_) {
    squares += bucket.buffer.to(torch::kDouble).square().sum().item<double>();
  }
  return std::sqrt(squares);
}

bool Reducer::gradients_finite() const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> finite;  // one flag per bucket, read back with one synchronisation
  for (const auto& bucket : buckets_) finite.push_back(torch::isfinite(bucket.buffer).all());
  return finite.empty() || torch::stack(finite).all().item<bool>();
}

void Reducer::scale_gradients(double factor) {
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) bucket.buffer.mul_(factor);
}

void Reducer::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) bucket.buffer.zero_();
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& param = params_[i].tensor;
    if (!param.grad().is_same(slots_[i].view)) param.mutable_grad() = slots_[i].view;
  }
}

}  // namespace ddpt
