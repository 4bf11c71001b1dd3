#include "ddp/data_parallel.hpp"

#include <algorithm>

#include "util/gradients_in_place.hpp"

namespace ddpt {

void broadcast_from_rank0(const std::vector<NamedTensor>& tensors, Communicator& comm) {
  torch::NoGradGuard no_grad;
  for (const auto& named : tensors) {
    torch::Tensor data = named.tensor.detach();
    if (data.is_contiguous()) {
      comm.broadcast(data, 0);
    } else {
      torch::Tensor packed = data.contiguous();
      comm.broadcast(packed, 0);
      data.copy_(packed);
    }
  }
}

namespace {

constexpr int64_t kCacheLineBytes = 64;

// Whether `params` can move into one flat copy: CPU tensors of one dtype, each contiguous and the
// whole of its own storage (so no two alias each other, as tied weights would).
bool flattenable(const std::vector<NamedTensor>& params) {
  if (params.empty()) return false;
  const torch::Tensor& first = params.front().tensor;
  return std::all_of(params.begin(), params.end(), [&](const NamedTensor& p) {
    const torch::Tensor& t = p.tensor;
    return t.device().is_cpu() && t.scalar_type() == first.scalar_type() && t.is_contiguous() &&
           t.storage_offset() == 0 &&
           t.storage().nbytes() == static_cast<size_t>(t.numel()) * t.element_size();
  });
}

// Collective: every parameter becomes a view of one copy in memory the node's ranks share, holding
// rank 0's values. False (nothing changed, on every rank) where that cannot be.
bool share_parameters(const std::vector<NamedTensor>& params, Communicator& comm) {
  if (!flattenable(params)) return false;  // the same answer on every rank: the same model
  // Each parameter starts on a cache line, as an allocation of its own would.
  const int64_t align = kCacheLineBytes / params.front().tensor.element_size();
  std::vector<int64_t> offsets;
  int64_t numel = 0;
  for (const auto& p : params) {
    offsets.push_back(numel);
    numel += (p.tensor.numel() + align - 1) / align * align;
  }
  NodeSharedMemory* shared = comm.node_shared_memory();
  if (shared == nullptr) return false;
  const torch::Tensor common = shared->allocate_common(
      numel, params.front().tensor.options().requires_grad(false), "parameters");
  if (!common.defined()) return false;
  torch::NoGradGuard no_grad;
  auto view_of = [&](size_t i) {
    return common.narrow(0, offsets[i], params[i].tensor.numel()).view(params[i].tensor.sizes());
  };
  if (comm.rank() == 0) {
    for (size_t i = 0; i < params.size(); ++i) view_of(i).copy_(params[i].tensor.detach());
  }
  comm.barrier();  // rank 0's values are in before any rank uses them
  // set_data keeps the parameter's identity (the model's and the optimizer's references, its
  // autograd metadata) and replaces only its memory.
  for (size_t i = 0; i < params.size(); ++i) params[i].tensor.set_data(view_of(i));
  return true;
}

}  // namespace

DataParallel::DataParallel(std::vector<NamedTensor> params, std::vector<NamedTensor> buffers,
                           Communicator& comm, const DataParallelOptions& options)
    : comm_(comm), buffers_(std::move(buffers)) {
  const ShardingPlan& plan = options.sharding;
  const bool shared =
      plan.share_parameters() && options.shared_memory && share_parameters(params, comm);
  // ZeRO-3 broadcasts each unit as it shards it.
  if (!shared && !plan.parameters_sharded()) broadcast_from_rank0(params, comm);
  broadcast_from_rank0(buffers_, comm);
  ReducerOptions reducer;
  reducer.first_bucket_bytes = mib_to_bytes(options.first_bucket_mb);
  reducer.bucket_bytes = mib_to_bytes(options.bucket_mb);
  reducer.wire_dtype = plan.wire_dtype;
  if (plan.optimizer_sharded()) reducer.reduction = GradientReduction::kReduceScatter;
  reducer.backend_buffers = options.shared_memory;
  reducer.parameters_shared = shared;
  reducer.pooled_buckets = plan.gradients_sharded();
  reducer.waits = &waits_;
  if (plan.parameters_sharded()) {
    shard_by_unit(std::move(params), options, reducer);
    return;
  }
  reducer_ = std::make_unique<Reducer>(std::move(params), comm, reducer);
}

void DataParallel::shard_by_unit(std::vector<NamedTensor> params,
                                 const DataParallelOptions& options, ReducerOptions reducer) {
  // A parameter of at least the bucket cap is a bucket of its own, as under ZeRO-2.
  const int64_t large = reducer.bucket_bytes / static_cast<int64_t>(sizeof(float));
  UnitPlan plan = plan_units(params, options.block_prefixes, large, options.used_on_some_ranks);
  reducer.plan = plan.buckets;
  // The parameters become views of their units' buffers before the reducer hooks their gradient
  // accumulators.
  ShardedParameters::Options sharding;
  sharding.prefetch = options.sharding.prefetch;
  sharding.shared_memory = options.shared_memory;
  sharding.materialize = options.materialize;
  sharding.source = options.source;
  sharding.waits = &waits_;
  units_ = std::make_unique<ShardedParameters>(params, std::move(plan), comm_, sharding);
  reducer_ = std::make_unique<Reducer>(std::move(params), comm_, reducer);
  reducer_->shard_parameters(units_->shards(),
                             [units = units_.get()](size_t b) { units->gradients_done(b); });
}

void DataParallel::backward(const torch::Tensor& loss, BackwardKind kind) {
  reducer_->prepare_for_backward(kind);
  // Dividing the loss (one scalar) by the world size makes every local gradient g/N, so a plain
  // sum across ranks is the average: no extra pass over the gradients after the all-reduce.
  // Micro-steps without sync accumulate g/N as well, so the final sum is unchanged.
  // A plain backward accumulates into .grad (the reducer's slots), so an operation may write a
  // slot that holds nothing yet in this step directly.
  const GradientsInPlace in_place(*reducer_);
  if (comm_.size() > 1) {
    (loss / static_cast<double>(comm_.size())).backward();
  } else {
    loss.backward();
  }
  if (reducer_->reduces()) reducer_->finalize_backward();
  // ZeRO-3: a backward that reduced nothing (a local one) released nothing either.
  if (units_) units_->release_all();
}

}  // namespace ddpt
