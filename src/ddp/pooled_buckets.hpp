// ZeRO-2 and 3's gradient buckets, which have no memory of their own: a bucket borrows its buffer
// from a small pool (ddp/bucket_pool.hpp) when its first gradient arrives and gives it back once
// its reduce-scatter has landed, so a rank holds 1/N of the gradients (its shards) plus two
// buckets, instead of all of them. A bucket of one parameter of at least the bucket cap (a large
// embedding or weight) borrows nothing, so the pool's entries are the size of the largest bucket
// of several: its reduce-scatter sends the gradient backward made where that can be sent as it
// is, or else a buffer of its own taken for the one backward.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ddp/bucket_plan.hpp"
#include "ddp/bucket_pool.hpp"
#include "ddp/reducer_bucket.hpp"
#include "ddp/shard_plan.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

class PooledBuckets {
 public:
  // `plan` and `shards` by bucket, `params` by parameter index; buckets are padded to `ranks`
  // blocks and reduced in `wire_dtype`.
  PooledBuckets(const std::vector<BucketSpec>& plan, const std::vector<BucketShard>& shards,
                const std::vector<NamedTensor>& params, int ranks, torch::ScalarType wire_dtype);

  // Bucket `b` holds one parameter alone and borrows nothing from the pool.
  bool direct(size_t b) const { return direct_[b]; }
  // Where bucket `b`'s parameter of `shape` at `offset` writes its gradient, borrowing the
  // bucket's buffer first if it has none. While every pooled entry is lent, `finish_oldest`
  // finishes the oldest reduction in flight (which gives its buffer back) or returns false when
  // none is in flight (the pool then grows).
  torch::Tensor slot(size_t b, ReducerBucket& bucket, int64_t offset, const torch::Tensor& shape,
                     const std::function<bool()>& finish_oldest);
  // A direct bucket: `incoming`, the gradient backward made for its parameter `shape`, becomes
  // the buffer sent if it can be sent as it is (whole, dense, contiguous, in the wire dtype, and
  // dividing into the ranks' blocks). Returns whether it did.
  bool send_as_it_is(size_t b, ReducerBucket& bucket, const torch::Tensor& shape,
                     const torch::Tensor& incoming);
  // Lends bucket `b` a pooled entry's buffers (see slot()); the padding is zeroed.
  void borrow(size_t b, ReducerBucket& bucket, const std::function<bool()>& finish_oldest);
  // A direct bucket's buffer for an all-gather of its parameter: one the padded size, its own.
  void take_own_buffer(size_t b, ReducerBucket& bucket, const torch::TensorOptions& options);
  // Bucket `b`'s buffers back to the pool (or dropped, for a direct bucket).
  void give_back(size_t b, ReducerBucket& bucket);
  // Where bucket `b`'s reduce-scatter lands: this rank's block, in the wire precision.
  const torch::Tensor& landing(size_t b) const { return landing_[b]; }

  // Bytes the pool holds now.
  int64_t bytes() const { return pool_ ? pool_->bytes() : 0; }
  // The same once a backward has run: the pool then holds at least the entries it lends before
  // a bucket waits.
  int64_t planned_bytes() const;

 private:
  // A direct bucket's buffer is `gradient` (the whole parameter's, flat) for this backward.
  void use_buffer(size_t b, ReducerBucket& bucket, torch::Tensor gradient);

  const std::vector<BucketSpec>& plan_;
  const std::vector<BucketShard>& shards_;
  int ranks_;
  torch::ScalarType wire_dtype_;
  std::unique_ptr<BucketPool> pool_;  // null without buckets
  std::vector<char> direct_;          // by bucket
  std::vector<int> entry_;            // by bucket: the pooled entry lent, or -1
  std::vector<torch::Tensor> landing_;
};

}  // namespace ddpt
