#include "ddp/bucket_reduction.hpp"

namespace ddpt {
namespace {

class AllReduce final : public BucketReduction {
 public:
  explicit AllReduce(Communicator& comm) : comm_(comm) {}
  // A sum: DataParallel::backward already divided the loss by the world size.
  std::shared_ptr<Work> launch(size_t, ReducerBucket&, const torch::Tensor& sent) override {
    return comm_.all_reduce_async(sent, ReduceOp::kSum);
  }
  // The sum landed in what was sent: from the wire copy back into the bucket.
  void complete(size_t, ReducerBucket& bucket) override {
    if (bucket.wire.defined()) bucket.buffer.copy_(bucket.wire);
  }

 private:
  Communicator& comm_;
};

}  // namespace

std::unique_ptr<BucketReduction> all_reduce(Communicator& comm) {
  return std::make_unique<AllReduce>(comm);
}

}  // namespace ddpt
