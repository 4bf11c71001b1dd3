// How a full bucket's gradients are summed over the ranks, and where the sum lands. The Reducer
// (ddp/reducer.hpp) keeps what every mode shares (the hooks, the slots, which parameters are
// ready, the launch in bucket order, the lazy zeroing) and hands each full bucket to the one
// reduction it picks from the mode: the gradients of one rank as they are; an all-reduce (plain
// data parallel); a reduce-scatter into this rank's block (ZeRO-1), or its node-shared-memory
// form that also gives the block's sum of squares; a reduce-scatter of a pooled buffer added into
// the persistent shard (ZeRO-2 and 3). Gradients on the wire in 16 bits (ddp.compress) wrap any
// of them. Each is a file of ddp/reductions/, and keeps by bucket what its mode needs beyond the
// bucket. (PyTorch's c10d keeps its reducer apart from the reduction the same way, through
// communication hooks.)
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.hpp"
#include "ddp/reducer_bucket.hpp"

namespace ddpt {

class PooledBuckets;

class BucketReduction {
 public:
  virtual ~BucketReduction() = default;
  // Starts the sum of `sent` (bucket `b`'s buffer, or its wire copy) over the ranks; null when
  // there is nothing to communicate.
  virtual std::shared_ptr<Work> launch(size_t b, ReducerBucket& bucket,
                                       const torch::Tensor& sent) = 0;
  // After the launched work has completed (or none was launched): the sum where it belongs.
  virtual void complete(size_t b, ReducerBucket& bucket) = 0;
  // The global sum of squares of every bucket's sum, where the reduction itself gave it: the
  // reducer then needs no pass or collective of its own for the norm.
  virtual std::optional<double> squares() const { return std::nullopt; }
  // A new step begins (Reducer::zero_grad): sums accumulated over micro-steps start afresh.
  virtual void new_step() {}
  // Bytes of memory the reduction holds of its own.
  virtual int64_t held_bytes() const { return 0; }
};

// One rank without ZeRO: the gradients are already the sum.
std::unique_ptr<BucketReduction> own_gradients();
// Plain data parallel: every rank gets the whole sum, in the bucket.
std::unique_ptr<BucketReduction> all_reduce(Communicator& comm);
// ZeRO-1: this rank gets its block of bucket b's sum in `shard_gradients[b]` (kept by the
// caller, by bucket), through a copy of the block in `wire_dtype` where that differs.
std::unique_ptr<BucketReduction> reduce_scatter(Communicator& comm,
                                                const std::vector<torch::Tensor>& shard_gradients,
                                                torch::ScalarType wire_dtype);
// ZeRO-1 with every bucket in node-shared memory, each `shard_gradients[b]` this rank's block of
// bucket b's buffer: the block's sum lands in place, with its global sum of squares. `comm` must
// have node-shared memory.
std::unique_ptr<BucketReduction> node_reduce_scatter(
    Communicator& comm, const std::vector<torch::Tensor>& shard_gradients);
// ZeRO-2 and 3: the sum of this rank's block lands in the pooled landing and is added into
// `shard_gradients[b]` (written by the step's first micro-step); the bucket's pooled buffers then
// go back.
std::unique_ptr<BucketReduction> pooled_reduce_scatter(
    Communicator& comm, PooledBuckets& pooled, const std::vector<torch::Tensor>& shard_gradients);
// ddp.compress: the bucket is copied into its wire tensor (16 bits) and `inner` sends that.
std::unique_ptr<BucketReduction> on_the_wire(std::unique_ptr<BucketReduction> inner);

}  // namespace ddpt
