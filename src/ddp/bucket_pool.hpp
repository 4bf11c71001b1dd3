// ZeRO-2's gradient buffers: a bucket holds its gradients only from its first gradient to the end
// of its reduce-scatter, so a few buffers, lent in turn, serve every bucket of a backward. Each
// entry is the size of the largest bucket; a bucket uses its front.
//
// The pool grows on demand: to two entries before any bucket waits (one fills while the one
// before it is reduced), and beyond that only where every lent entry belongs to a bucket not yet
// launched (gradients arriving out of bucket order), since waiting for one of those would never
// end. Entries are kept for the next backward: on a CPU, memory taken fresh each step costs its
// page faults each step.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace ddpt {

struct PooledBuffers {
  torch::Tensor buffer;   // gradients, in their own precision
  torch::Tensor wire;     // the same in the wire precision (ddp.compress), else undefined
  torch::Tensor landing;  // this rank's block of the summed bucket, in the wire precision
};

class BucketPool {
 public:
  // Entries made alike: `numel` gradients of `options` and `block` landing values, with a wire
  // copy where `wire_dtype` is not the gradients' dtype.
  BucketPool(int64_t numel, int64_t block, const torch::TensorOptions& options,
             torch::ScalarType wire_dtype);

  // Entries held before a bucket may have to wait for an earlier bucket's reduction.
  static constexpr size_t kEntriesBeforeWaiting = 2;

  // An entry lent to nobody, now lent; -1 if every entry is lent.
  int lend();
  // A new entry, lent.
  int grow();
  void give_back(int entry);
  const PooledBuffers& operator[](int entry) const { return entries_.at(entry); }
  size_t size() const { return entries_.size(); }
  torch::ScalarType wire_dtype() const { return wire_dtype_; }
  int64_t bytes() const;
  // What one entry holds, in bytes.
  int64_t entry_bytes() const;

 private:
  int64_t numel_;
  int64_t block_;
  torch::TensorOptions options_;
  torch::ScalarType wire_dtype_;
  std::vector<PooledBuffers> entries_;
  std::vector<char> lent_;
};

}  // namespace ddpt
