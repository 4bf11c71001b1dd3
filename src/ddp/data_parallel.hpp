// The data-parallel engine in one object: makes every rank start from rank 0's parameters and
// buffers, and averages gradients across ranks during backward (through the Reducer).
#pragma once

#include <memory>
#include <vector>

#include "ddp/reducer.hpp"

namespace ddpt {

struct DataParallelOptions {
  double first_bucket_mb = kDefaultFirstBucketMiB;
  double bucket_mb = kDefaultBucketMiB;
};

class DataParallel {
 public:
  // Collective: broadcasts `params` and `buffers` from rank 0, then sets up the buckets.
  DataParallel(std::vector<NamedTensor> params, std::vector<NamedTensor> buffers,
               Communicator& comm, const DataParallelOptions& options);

  // Runs loss.backward(). With `sync` (the last micro-step of an optimizer step) it is
  // collective and, on return, every parameter's .grad holds the average over all ranks.
  void backward(const torch::Tensor& loss, bool sync);
  void zero_grad() { reducer_->zero_grad(); }

  const Reducer& reducer() const { return *reducer_; }
  Reducer& reducer() { return *reducer_; }
  Communicator& communicator() { return comm_; }

 private:
  Communicator& comm_;
  std::unique_ptr<Reducer> reducer_;
};

// Collective: every rank's tensors take rank 0's values (in place, in the given order).
void broadcast_from_rank0(const std::vector<NamedTensor>& tensors, Communicator& comm);

}  // namespace ddpt
