// How a full bucket's gradients are summed over the ranks, and where the sum lands. The Reducer
// (ddp/reducer.hpp) keeps what every mode shares (the hooks, the slots, which parameters are
// ready, the launch in bucket order, the lazy zeroing) and hands each full bucket to the one
// reduction make_bucket_reduction picks from the mode: the gradients of one rank as they are;
// an all-reduce (plain data parallel); a reduce-scatter into this rank's block (ZeRO-1), or its
// node-shared-memory form that also gives the block's sum of squares; a reduce-scatter of a
// pooled buffer added into the persistent shard (ZeRO-2 and 3). Gradients on the wire in 16 bits
// (ddp.compress) wrap any of them. Each is a file of ddp/reductions/. (PyTorch's c10d keeps its
// reducer apart from the reduction the same way, through communication hooks.)
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

#include "comm/communicator.hpp"
#include "ddp/reducer_bucket.hpp"

namespace ddpt {

class BucketReduction {
 public:
  virtual ~BucketReduction() = default;
  // Starts the sum of `sent` (the bucket's buffer, or its wire copy) over the ranks; null when
  // there is nothing to communicate.
  virtual std::shared_ptr<Work> launch(ReducerBucket& bucket, const torch::Tensor& sent) = 0;
  // After the launched work has completed (or none was launched): the sum where it belongs.
  virtual void complete(ReducerBucket& bucket) = 0;
  // The sum's destination already holds the whole global sum of squares of its values
  // (ReducerBucket::squares): the reducer needs no collective of its own for the norm.
  virtual bool gives_squares() const { return false; }
};

// One rank without ZeRO: the gradients are already the sum.
std::unique_ptr<BucketReduction> own_gradients();
// Plain data parallel: every rank gets the whole sum, in the bucket.
std::unique_ptr<BucketReduction> all_reduce(Communicator& comm);
// ZeRO-1: this rank gets its block of the sum, in shard_gradient.
std::unique_ptr<BucketReduction> reduce_scatter(Communicator& comm);
// ZeRO-1 with every bucket in node-shared memory: the block's sum lands in place, with its
// global sum of squares. `comm` must have node-shared memory.
std::unique_ptr<BucketReduction> node_reduce_scatter(Communicator& comm);
// ZeRO-2 and 3: the sum of this rank's block lands in the pooled `landing` and is added into
// shard_gradient (written by the step's first micro-step); `give_back` then returns the bucket's
// pooled buffers.
std::unique_ptr<BucketReduction> pooled_reduce_scatter(
    Communicator& comm, std::function<void(ReducerBucket&)> give_back);
// ddp.compress: the bucket is copied into its wire tensor (16 bits) and `inner` sends that.
std::unique_ptr<BucketReduction> on_the_wire(std::unique_ptr<BucketReduction> inner);

}  // namespace ddpt
