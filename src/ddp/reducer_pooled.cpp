// The Reducer's sharded half: ZeRO-2's buckets that borrow pooled buffers (ddp/reducer.hpp,
// ddp/bucket_pool.hpp), the all-gather of the updated parameters (ZeRO-1 and 2), and ZeRO-3's
// parameter shards.
#include "ddp/reducer.hpp"

#include "util/error.hpp"

namespace ddpt {

torch::Tensor Reducer::pooled_slot(size_t param) {
  const size_t b = slots_[param].bucket;
  ReducerBucket& bucket = buckets_[b];
  const torch::Tensor& shape = params_[param].tensor;
  if (bucket.direct) {
    // Backward's gradient cannot be sent as it is (padding, a wire copy, its layout): a buffer of
    // the bucket's own for this backward, as large as that gradient, which is then dropped.
    if (!bucket.buffer.defined()) {
      const int64_t padded = shards_[b].block * comm_.size();
      direct_buffers(b, torch::empty({padded}, shape.options()));
      if (padded > shape.numel()) {
        bucket.buffer.narrow(0, shape.numel(), padded - shape.numel()).zero_();
      }
    }
    return bucket.buffer.narrow(0, 0, shape.numel()).view(shape.sizes());
  }
  if (bucket.pool_entry < 0) {
    // A full pool waits for the oldest reduction in flight; with none in flight (every lent
    // buffer still filling) it grows instead.
    borrow_buffers(b, [this] {
      if (next_completed_ == next_bucket_) return false;
      complete_reduction(next_completed_++);
      return true;
    });
  }
  return bucket.buffer.narrow(0, slots_[param].offset, shape.numel()).view(shape.sizes());
}

torch::autograd::variable_list Reducer::pooled_first_gradient(
    size_t param, const torch::autograd::variable_list& inputs) {
  // Outside a reduced backward (a trial step), autograd accumulates into .grad as usual.
  if (!reducing_ || !awaiting_[param]) return inputs;
  awaiting_[param] = 0;
  torch::NoGradGuard no_grad;
  const torch::Tensor& incoming = inputs.at(0);
  const size_t b = slots_[param].bucket;
  const torch::Tensor& shape = params_[param].tensor;
  if (buckets_[b].direct && shape.numel() % comm_.size() == 0 &&
      pool_->wire_dtype() == shape.scalar_type() && incoming.defined() &&
      incoming.layout() == torch::kStrided && incoming.is_contiguous() &&
      incoming.scalar_type() == shape.scalar_type() && incoming.device() == shape.device() &&
      incoming.numel() == shape.numel()) {
    // Autograd hands this gradient on and keeps no use of it: it can be sent as it is.
    direct_buffers(b, incoming.detach().view(-1));
    return {torch::Tensor()};
  }
  const torch::Tensor slot = pooled_slot(param);
  if (incoming.defined()) {
    slot.copy_(incoming.layout() == torch::kStrided ? incoming : incoming.to_dense());
  } else {
    slot.zero_();
  }
  return {torch::Tensor()};  // written: the accumulator adds nothing, and .grad stays undefined
}

void Reducer::borrow_buffers(size_t b, const std::function<bool()>& finish_oldest) {
  int entry = pool_->lend();
  while (entry < 0 && pool_->size() >= BucketPool::kEntriesBeforeWaiting && finish_oldest()) {
    entry = pool_->lend();
  }
  if (entry < 0) entry = pool_->grow();
  ReducerBucket& bucket = buckets_[b];
  const PooledBuffers& lent = (*pool_)[entry];
  const int64_t block = shards_[b].block;
  const int64_t padded = block * comm_.size();
  bucket.pool_entry = entry;
  bucket.buffer = lent.buffer.narrow(0, 0, padded);
  bucket.wire = lent.wire.defined() ? lent.wire.narrow(0, 0, padded) : torch::Tensor();
  bucket.landing = lent.landing.narrow(0, 0, block);
  // The padding is reduced with the gradients and must add nothing.
  const int64_t used = plan_[b].numel;
  if (padded > used) bucket.buffer.narrow(0, used, padded - used).zero_();
}

void Reducer::direct_buffers(size_t b, torch::Tensor gradient) {
  ReducerBucket& bucket = buckets_[b];
  const auto wire = gradient.options().dtype(pool_->wire_dtype());
  bucket.landing = torch::empty({shards_[b].block}, wire);
  if (pool_->wire_dtype() != gradient.scalar_type()) {
    bucket.wire = torch::empty({gradient.numel()}, wire);
  }
  bucket.buffer = std::move(gradient);
}

void Reducer::give_back_buffers(ReducerBucket& bucket) {
  if (bucket.pool_entry >= 0) pool_->give_back(bucket.pool_entry);
  bucket.pool_entry = -1;
  bucket.buffer = bucket.wire = bucket.landing = torch::Tensor();
}

void Reducer::all_gather_through_pool() {
  torch::NoGradGuard no_grad;
  // Bucket b's gather borrows pooled buffers; once every entry is lent, the oldest gather is
  // finished (its parameters copied out) and its buffers go to the next bucket.
  size_t copied = 0;
  auto finish = [&](size_t b) {
    buckets_[b].work->wait();
    buckets_[b].work.reset();
    if (gathered_in_place(b)) return;
    for (size_t k = 0; k < plan_[b].params.size(); ++k) {
      torch::Tensor param = params_[plan_[b].params[k]].tensor.detach();
      param.view(-1).copy_(buckets_[b].buffer.narrow(0, plan_[b].offsets[k], param.numel()));
    }
    give_back_buffers(buckets_[b]);
  };
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const torch::Tensor& param = params_[plan_[b].params.front()].tensor;
    if (gathered_in_place(b)) {
      // The parameter holds this rank's updated block already (the optimizer's pieces alias it).
      buckets_[b].work = comm_.all_gather_in_place_async(param.detach().view(-1));
      continue;
    }
    if (buckets_[b].direct) {
      // A buffer the parameter's size, for this gather only: the ones before it finish first, so
      // that no two such buffers are held at once.
      while (copied < b) finish(copied++);
      buckets_[b].buffer = torch::empty({shards_[b].block * comm_.size()}, param.options());
    } else {
      borrow_buffers(b, [&] {
        if (copied == b) return false;  // nothing in flight
        finish(copied++);
        return true;
      });
    }
    fill_own_block(b);
    buckets_[b].work = comm_.all_gather_in_place_async(buckets_[b].buffer);
  }
  while (copied < buckets_.size()) finish(copied++);
}

bool Reducer::gathered_in_place(size_t b) const {
  return buckets_[b].direct && plan_[b].numel % comm_.size() == 0;
}

int64_t Reducer::planned_bytes() const {
  if (!pool_) return held_bytes();
  const auto entries =
      static_cast<int64_t>(std::max(pool_->size(), BucketPool::kEntriesBeforeWaiting));
  return held_bytes() - pool_->bytes() + entries * pool_->entry_bytes();
}

int64_t Reducer::held_bytes() const {
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : int64_t{0};
  };
  int64_t total = pool_ ? pool_->bytes() : 0;
  for (const ReducerBucket& bucket : buckets_) {
    if (!pooled_) total += bytes(bucket.buffer) + bytes(bucket.wire);
    // In shared memory the shard is a block of the buffer, counted with it.
    if (!pooled_ && in_shared_memory(comm_, bucket.buffer)) continue;
    total += bytes(bucket.shard_gradient) + bytes(bucket.shard_wire);
  }
  return total;
}

void Reducer::shard_parameters(std::vector<torch::Tensor> shards,
                               std::function<void(size_t)> gradients_done) {
  if (!pooled_ || shards.size() != buckets_.size()) {
    throw Error("Reducer: sharded parameters need ZeRO-2's buckets, one shard per bucket",
                ExitCode::kInternal, Raised::kAllRanks);
  }
  parameter_shards_ = std::move(shards);
  gradients_done_ = std::move(gradients_done);
}

void Reducer::all_gather_parameters() {
  if (parameters_sharded()) return;
  if (parameters_shared_) {
    // Every rank's update is in the one copy; no rank may read it (the next forward) until all
    // are done writing.
    comm_.barrier();
    return;
  }
  if (pooled_) {
    all_gather_through_pool();
    return;
  }
  torch::NoGradGuard no_grad;
  std::vector<std::shared_ptr<Work>> gathers;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    fill_own_block(b);
    gathers.push_back(comm_.all_gather_in_place_async(buckets_[b].buffer));
  }
  // Copies out bucket b while the later buckets are still being gathered.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    gathers[b]->wait();
    for (const size_t i : plan_[b].params) params_[i].tensor.detach().copy_(slots_[i].view);
  }
}

void Reducer::fill_own_block(size_t b) {
  // This rank's block of the bucket, from its updated pieces; the padding stays as it is.
  torch::Tensor own =
      buckets_[b].buffer.narrow(0, shards_[b].block * comm_.rank(), shards_[b].block);
  for (const ShardPiece& piece : shards_[b].pieces) {
    own.narrow(0, piece.block_offset, piece.numel)
        .copy_(params_[piece.param].tensor.detach().view(-1).narrow(0, piece.param_offset,
                                                                    piece.numel));
  }
}

}  // namespace ddpt
