#include "ddp/bucket_reduction.hpp"

namespace ddpt {
namespace {

class PooledReduceScatter final : public BucketReduction {
 public:
  PooledReduceScatter(Communicator& comm, std::function<void(ReducerBucket&)> give_back)
      : comm_(comm), give_back_(std::move(give_back)) {}
  std::shared_ptr<Work> launch(ReducerBucket& bucket, const torch::Tensor& sent) override {
    return comm_.reduce_scatter_async(sent, bucket.landing);
  }
  // The first micro-step's sum is written, later ones' added: no zeroing pass over the shard.
  void complete(ReducerBucket& bucket) override {
    if (bucket.shard_written) {
      bucket.shard_gradient.add_(bucket.landing);
    } else {
      bucket.shard_gradient.copy_(bucket.landing);
    }
    bucket.shard_written = true;
    give_back_(bucket);
  }

 private:
  Communicator& comm_;
  std::function<void(ReducerBucket&)> give_back_;
};

}  // namespace

std::unique_ptr<BucketReduction> pooled_reduce_scatter(
    Communicator& comm, std::function<void(ReducerBucket&)> give_back) {
  return std::make_unique<PooledReduceScatter>(comm, std::move(give_back));
}

}  // namespace ddpt
