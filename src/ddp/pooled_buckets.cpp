#include "ddp/pooled_buckets.hpp"

#include <algorithm>

namespace ddpt {

PooledBuckets::PooledBuckets(const std::vector<BucketSpec>& plan,
                             const std::vector<BucketShard>& shards,
                             const std::vector<NamedTensor>& params, int ranks,
                             torch::ScalarType wire_dtype)
    : plan_(plan),
      shards_(shards),
      ranks_(ranks),
      wire_dtype_(wire_dtype),
      direct_(plan.size(), 0),
      entry_(plan.size(), -1),
      landing_(plan.size()) {
  int64_t largest = 0;
  int64_t largest_block = 0;
  for (size_t b = 0; b < plan_.size(); ++b) {
    const torch::Tensor& first = params[plan_[b].params.front()].tensor;
    direct_[b] = plan_[b].params.size() == 1 && first.is_contiguous();
    if (direct_[b]) continue;
    largest = std::max(largest, shards_[b].block * ranks_);
    largest_block = std::max(largest_block, shards_[b].block);
  }
  if (plan_.empty()) return;
  const torch::Tensor& any = params[plan_.front().params.front()].tensor;
  pool_ = std::make_unique<BucketPool>(largest, largest_block, any.options().requires_grad(false),
                                       wire_dtype_);
}

torch::Tensor PooledBuckets::slot(size_t b, ReducerBucket& bucket, int64_t offset,
                                  const torch::Tensor& shape,
                                  const std::function<bool()>& finish_oldest) {
  if (direct_[b]) {
    // Backward's gradient cannot be sent as it is (padding, a wire copy, its layout): a buffer of
    // the bucket's own for this backward, as large as that gradient, which is then dropped.
    if (!bucket.buffer.defined()) {
      const int64_t padded = shards_[b].block * ranks_;
      use_buffer(b, bucket, torch::empty({padded}, shape.options().requires_grad(false)));
      if (padded > shape.numel()) {
        bucket.buffer.narrow(0, shape.numel(), padded - shape.numel()).zero_();
      }
    }
    return bucket.buffer.narrow(0, 0, shape.numel()).view(shape.sizes());
  }
  if (entry_[b] < 0) borrow(b, bucket, finish_oldest);
  return bucket.buffer.narrow(0, offset, shape.numel()).view(shape.sizes());
}

bool PooledBuckets::send_as_it_is(size_t b, ReducerBucket& bucket, const torch::Tensor& shape,
                                  const torch::Tensor& incoming) {
  if (!direct_[b] || shape.numel() % ranks_ != 0 || wire_dtype_ != shape.scalar_type() ||
      !incoming.defined() || incoming.layout() != torch::kStrided || !incoming.is_contiguous() ||
      incoming.scalar_type() != shape.scalar_type() || incoming.device() != shape.device() ||
      incoming.numel() != shape.numel()) {
    return false;
  }
  // Autograd hands this gradient on and keeps no use of it: it can be sent as it is.
  use_buffer(b, bucket, incoming.detach().view(-1));
  return true;
}

void PooledBuckets::borrow(size_t b, ReducerBucket& bucket,
                           const std::function<bool()>& finish_oldest) {
  int entry = pool_->lend();
  while (entry < 0 && pool_->size() >= BucketPool::kEntriesBeforeWaiting && finish_oldest()) {
    entry = pool_->lend();
  }
  if (entry < 0) entry = pool_->grow();
  const PooledBuffers& lent = (*pool_)[entry];
  const int64_t block = shards_[b].block;
  const int64_t padded = block * ranks_;
  entry_[b] = entry;
  bucket.buffer = lent.buffer.narrow(0, 0, padded);
  bucket.wire = lent.wire.defined() ? lent.wire.narrow(0, 0, padded) : torch::Tensor();
  landing_[b] = lent.landing.narrow(0, 0, block);
  // The padding is reduced with the gradients and must add nothing.
  const int64_t used = plan_[b].numel;
  if (padded > used) bucket.buffer.narrow(0, used, padded - used).zero_();
}

void PooledBuckets::take_own_buffer(size_t b, ReducerBucket& bucket,
                                    const torch::TensorOptions& options) {
  bucket.buffer = torch::empty({shards_[b].block * ranks_}, options);
}

void PooledBuckets::use_buffer(size_t b, ReducerBucket& bucket, torch::Tensor gradient) {
  const auto wire = gradient.options().dtype(wire_dtype_);
  landing_[b] = torch::empty({shards_[b].block}, wire);
  if (wire_dtype_ != gradient.scalar_type()) {
    bucket.wire = torch::empty({gradient.numel()}, wire);
  }
  bucket.buffer = std::move(gradient);
}

void PooledBuckets::give_back(size_t b, ReducerBucket& bucket) {
  if (entry_[b] >= 0) pool_->give_back(entry_[b]);
  entry_[b] = -1;
  bucket.buffer = bucket.wire = landing_[b] = torch::Tensor();
}

int64_t PooledBuckets::planned_bytes() const {
  if (!pool_) return 0;
  const auto entries =
      static_cast<int64_t>(std::max(pool_->size(), BucketPool::kEntriesBeforeWaiting));
  return entries * pool_->entry_bytes();
}

}  // namespace ddpt
