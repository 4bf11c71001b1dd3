#include "comm/node_shared_memory.hpp"
#include "ddp/bucket_reduction.hpp"

namespace ddpt {
namespace {

class ReduceScatter final : public BucketReduction {
 public:
  explicit ReduceScatter(Communicator& comm) : comm_(comm) {}
  std::shared_ptr<Work> launch(ReducerBucket& bucket, const torch::Tensor& sent) override {
    return comm_.reduce_scatter_async(
        sent, bucket.shard_wire.defined() ? bucket.shard_wire : bucket.shard_gradient);
  }
  void complete(ReducerBucket& bucket) override {
    if (bucket.shard_wire.defined()) bucket.shard_gradient.copy_(bucket.shard_wire);
  }

 private:
  Communicator& comm_;
};

// Every bucket in node-shared memory: a rank's block of the sum lands in place, in its own copy,
// and the sum of squares comes with it (no pass over the shards, no collective for the norm).
class NodeReduceScatter final : public BucketReduction {
 public:
  explicit NodeReduceScatter(NodeSharedMemory& shared) : shared_(shared) {}
  std::shared_ptr<Work> launch(ReducerBucket& bucket, const torch::Tensor& sent) override {
    return shared_.reduce_scatter_with_squares_async(sent, bucket.shard_gradient, &bucket.squares);
  }
  void complete(ReducerBucket&) override {}
  bool gives_squares() const override { return true; }

 private:
  NodeSharedMemory& shared_;
};

}  // namespace

std::unique_ptr<BucketReduction> reduce_scatter(Communicator& comm) {
  return std::make_unique<ReduceScatter>(comm);
}

std::unique_ptr<BucketReduction> node_reduce_scatter(Communicator& comm) {
  return std::make_unique<NodeReduceScatter>(*comm.node_shared_memory());
}

}  // namespace ddpt
