// The Reducer's sharded half: ZeRO-2's slots in borrowed buffers (ddp/reducer.hpp,
// ddp/pooled_buckets.hpp), the all-gather of the updated parameters (ZeRO-1 and 2), the memory
// held, and ZeRO-3's parameter shards.
#include "ddp/reducer.hpp"

#include "util/error.hpp"

namespace ddpt {

torch::Tensor Reducer::pooled_slot(size_t param) {
  const size_t b = slots_[param].bucket;
  // A full pool waits for the oldest reduction in flight; with none in flight (every lent buffer
  // still filling) it grows instead.
  return pooled_->slot(b, buckets_[b], slots_[param].offset, params_[param].tensor, [this] {
    if (next_completed_ == next_bucket_) return false;
    complete_reduction(next_completed_++);
    return true;
  });
}

torch::autograd::variable_list Reducer::pooled_first_gradient(
    size_t param, const torch::autograd::variable_list& inputs) {
  // Outside a reduced backward (a trial step), autograd accumulates into .grad as usual.
  if (!reducing_ || !awaiting_[param]) return inputs;
  awaiting_[param] = 0;
  torch::NoGradGuard no_grad;
  const torch::Tensor& incoming = inputs.at(0);
  const size_t b = slots_[param].bucket;
  if (pooled_->send_as_it_is(b, buckets_[b], params_[param].tensor, incoming)) {
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
    pooled_->give_back(b, buckets_[b]);
  };
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const torch::Tensor& param = params_[plan_[b].params.front()].tensor;
    if (gathered_in_place(b)) {
      // The parameter holds this rank's updated block already (the optimizer's pieces alias it).
      buckets_[b].work = comm_.all_gather_in_place_async(param.detach().view(-1));
      continue;
    }
    if (pooled_->direct(b)) {
      // A buffer the parameter's size, for this gather only: the ones before it finish first, so
      // that no two such buffers are held at once.
      while (copied < b) finish(copied++);
      pooled_->take_own_buffer(b, buckets_[b], param.options());
    } else {
      pooled_->borrow(b, buckets_[b], [&] {
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
  return pooled_->direct(b) && plan_[b].numel % comm_.size() == 0;
}

int64_t Reducer::planned_bytes() const {
  if (!pooled_) return held_bytes();
  return held_bytes() - pooled_->bytes() + pooled_->planned_bytes();
}

int64_t Reducer::held_bytes() const {
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : int64_t{0};
  };
  // ZeRO-2 and 3: the buckets' buffers are the pool's.
  int64_t total = pooled_ ? pooled_->bytes() : 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (!pooled_) total += bytes(buckets_[b].buffer) + bytes(buckets_[b].wire);
    // In shared memory the shard is a block of the buffer, counted with it.
    if (!shard_gradients_.empty() && !(!pooled_ && in_shared_memory(comm_, buckets_[b].buffer))) {
      total += bytes(shard_gradients_[b]);
    }
  }
  return total + reduction_of_buckets_->held_bytes();
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
