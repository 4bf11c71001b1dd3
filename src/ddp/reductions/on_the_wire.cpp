#include "ddp/bucket_reduction.hpp"

namespace ddpt {
namespace {

// A bucket without a wire tensor (its gradients already in the wire's precision, or a ZeRO-2
// bucket sent as backward made it) is sent as it is.
class OnTheWire final : public BucketReduction {
 public:
  explicit OnTheWire(std::unique_ptr<BucketReduction> inner) : inner_(std::move(inner)) {}
  std::shared_ptr<Work> launch(size_t b, ReducerBucket& bucket,
                               const torch::Tensor& sent) override {
    if (!bucket.wire.defined()) return inner_->launch(b, bucket, sent);
    bucket.wire.copy_(bucket.buffer);
    return inner_->launch(b, bucket, bucket.wire);
  }
  void complete(size_t b, ReducerBucket& bucket) override { inner_->complete(b, bucket); }
  std::optional<double> squares() const override { return inner_->squares(); }
  void new_step() override { inner_->new_step(); }
  int64_t held_bytes() const override { return inner_->held_bytes(); }

 private:
  std::unique_ptr<BucketReduction> inner_;
};

}  // namespace

std::unique_ptr<BucketReduction> on_the_wire(std::unique_ptr<BucketReduction> inner) {
  return std::make_unique<OnTheWire>(std::move(inner));
}

}  // namespace ddpt
