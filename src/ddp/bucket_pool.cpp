#include "ddp/bucket_pool.hpp"

#include "util/error.hpp"

namespace ddpt {

BucketPool::BucketPool(int64_t numel, int64_t block, const torch::TensorOptions& options,
                       torch::ScalarType wire_dtype)
    : numel_(numel), block_(block), options_(options), wire_dtype_(wire_dtype) {}

int BucketPool::lend() {
  for (size_t e = 0; e < entries_.size(); ++e) {
    if (!lent_[e]) {
      lent_[e] = 1;
      return static_cast<int>(e);
    }
  }
  return -1;
}

int BucketPool::grow() {
  PooledBuffers entry;
  entry.buffer = torch::empty({numel_}, options_);
  if (wire_dtype_ != options_.dtype().toScalarType()) {
    entry.wire = torch::empty({numel_}, options_.dtype(wire_dtype_));
  }
  entry.landing = torch::empty({block_}, options_.dtype(wire_dtype_));
  entries_.push_back(std::move(entry));
  lent_.push_back(1);
  return static_cast<int>(entries_.size() - 1);
}

void BucketPool::give_back(int entry) {
  if (entry < 0 || static_cast<size_t>(entry) >= lent_.size() || !lent_[entry]) {
    throw Error("BucketPool: entry " + std::to_string(entry) + " given back but not lent",
                ExitCode::kInternal, Raised::kThisRank);
  }
  lent_[entry] = 0;
}

int64_t BucketPool::entry_bytes() const {
  const auto gradient = static_cast<int64_t>(options_.dtype().itemsize());
  const auto wire = static_cast<int64_t>(c10::elementSize(wire_dtype_));
  const bool has_wire = wire_dtype_ != options_.dtype().toScalarType();
  return numel_ * gradient + (has_wire ? numel_ * wire : 0) + block_ * wire;
}

int64_t BucketPool::bytes() const {
  int64_t total = 0;
  for (const PooledBuffers& e : entries_) {
    for (const torch::Tensor* t : {&e.buffer, &e.wire, &e.landing}) {
      if (t->defined()) total += t->numel() * static_cast<int64_t>(t->element_size());
    }
  }
  return total;
}

}  // namespace ddpt
