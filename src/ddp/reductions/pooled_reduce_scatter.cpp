#include "ddp/bucket_reduction.hpp"
#include "ddp/pooled_buckets.hpp"

namespace ddpt {
namespace {

class PooledReduceScatter final : public BucketReduction {
 public:
  PooledReduceScatter(Communicator& comm, PooledBuckets& pooled,
                      const std::vector<torch::Tensor>& shard_gradients)
      : comm_(comm),
        pooled_(pooled),
        shard_gradients_(shard_gradients),
        written_(shard_gradients.size(), 0) {}
  std::shared_ptr<Work> launch(size_t b, ReducerBucket&, const torch::Tensor& sent) override {
    return comm_.reduce_scatter_async(sent, pooled_.landing(b));
  }
  // The step's first micro-step's sum is written, later ones' added: no zeroing pass over the
  // shard.
  void complete(size_t b, ReducerBucket& bucket) override {
    if (written_[b]) {
      shard_gradients_[b].add_(pooled_.landing(b));
    } else {
      shard_gradients_[b].copy_(pooled_.landing(b));
    }
    written_[b] = 1;
    pooled_.give_back(b, bucket);
  }
  void new_step() override { std::fill(written_.begin(), written_.end(), 0); }

 private:
  Communicator& comm_;
  PooledBuckets& pooled_;
  const std::vector<torch::Tensor>& shard_gradients_;
  std::vector<char> written_;  // by bucket: the shard holds this step's sum so far
};

}  // namespace

std::unique_ptr<BucketReduction> pooled_reduce_scatter(
    Communicator& comm, PooledBuckets& pooled, const std::vector<torch::Tensor>& shard_gradients) {
  return std::make_unique<PooledReduceScatter>(comm, pooled, shard_gradients);
}

}  // namespace ddpt
