#include "comm/node_shared_memory.hpp"
#include "ddp/bucket_reduction.hpp"

namespace ddpt {
namespace {

class ReduceScatter final : public BucketReduction {
 public:
  // A block in another precision than the gradients' (ddp.compress) lands in a copy of its own.
  ReduceScatter(Communicator& comm, const std::vector<torch::Tensor>& shard_gradients,
                torch::ScalarType wire_dtype)
      : comm_(comm), shard_gradients_(shard_gradients), shard_wires_(shard_gradients.size()) {
    for (size_t b = 0; b < shard_gradients_.size(); ++b) {
      const torch::Tensor& shard = shard_gradients_[b];
      if (shard.scalar_type() != wire_dtype) {
        shard_wires_[b] = torch::empty({shard.numel()}, shard.options().dtype(wire_dtype));
      }
    }
  }
  std::shared_ptr<Work> launch(size_t b, ReducerBucket&, const torch::Tensor& sent) override {
    return comm_.reduce_scatter_async(
        sent, shard_wires_[b].defined() ? shard_wires_[b] : shard_gradients_[b]);
  }
  void complete(size_t b, ReducerBucket&) override {
    if (shard_wires_[b].defined()) shard_gradients_[b].copy_(shard_wires_[b]);
  }
  int64_t held_bytes() const override {
    int64_t total = 0;
    for (const torch::Tensor& wire : shard_wires_) {
      if (wire.defined()) total += wire.numel() * static_cast<int64_t>(wire.element_size());
    }
    return total;
  }

 private:
  Communicator& comm_;
  const std::vector<torch::Tensor>& shard_gradients_;
  std::vector<torch::Tensor> shard_wires_;  // by bucket; undefined where the dtypes agree
};

// Every bucket in node-shared memory: a rank's block of the sum lands in place, in its own copy,
// and the sum of squares comes with it (no pass over the shards, no collective for the norm).
class NodeReduceScatter final : public BucketReduction {
 public:
  NodeReduceScatter(NodeSharedMemory& shared, const std::vector<torch::Tensor>& shard_gradients)
      : shared_(shared), shard_gradients_(shard_gradients), squares_(shard_gradients.size(), 0) {}
  std::shared_ptr<Work> launch(size_t b, ReducerBucket&, const torch::Tensor& sent) override {
    return shared_.reduce_scatter_with_squares_async(sent, shard_gradients_[b], &squares_[b]);
  }
  void complete(size_t, ReducerBucket&) override {}
  std::optional<double> squares() const override {
    double total = 0;
    for (const double s : squares_) total += s;
    return total;
  }

 private:
  NodeSharedMemory& shared_;
  const std::vector<torch::Tensor>& shard_gradients_;
  std::vector<double> squares_;  // by bucket: its block's sum's global sum of squares
};

}  // namespace

std::unique_ptr<BucketReduction> reduce_scatter(Communicator& comm,
                                                const std::vector<torch::Tensor>& shard_gradients,
                                                torch::ScalarType wire_dtype) {
  return std::make_unique<ReduceScatter>(comm, shard_gradients, wire_dtype);
}

std::unique_ptr<BucketReduction> node_reduce_scatter(
    Communicator& comm, const std::vector<torch::Tensor>& shard_gradients) {
  return std::make_unique<NodeReduceScatter>(*comm.node_shared_memory(), shard_gradients);
}

}  // namespace ddpt
