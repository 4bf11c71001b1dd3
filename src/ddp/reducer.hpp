// The gradient reducer: sums gradients across ranks while backward is still running.
// (DataParallel divides the loss by the world size first, which makes the sum the average.)
//
// Each parameter's gradient lives in a slot of a flat bucket buffer (param.grad is a view of it,
// so autograd accumulates straight into the bucket). A post hook on each parameter's gradient
// accumulator marks it ready; when every parameter of a bucket is ready and every earlier bucket
// has been launched, the bucket's all-reduce is launched on the communicator, which runs it
// asynchronously (MPI: communication thread; NCCL: its stream) while backward goes on. (MPI on
// one node: the bucket is handed over, and summed in shared memory by whichever of the node's
// threads is free; comm/node_all_reduce.hpp.)
// Buckets are launched in bucket order on every rank, so collectives match. A rank alone (world
// size 1) launches nothing: its gradients are the sum, and ddp.compress has no wire to round them
// for.
//
// ZeRO-1 (GradientReduction::kReduceScatter): each bucket is padded to a multiple of the world
// size and reduce-scattered instead, so a rank receives the summed gradient of its own block of
// each bucket only (ddp/shard_plan.hpp), which is all its share of the optimizer needs. After the
// optimizer has updated the rank's pieces of the parameters, all_gather_parameters() brings every
// rank's updated blocks into every parameter, using the gradient buckets (spent by then) as the
// gather buffers, so ZeRO-1 adds no full-size buffer. Where the node's ranks share one copy of
// the parameters (DataParallel, ddp/data_parallel.hpp), each rank's update is already in every
// rank's parameters, and all_gather_parameters() only waits for every rank to have made it.
//
// ZeRO-2 (ReducerOptions::pooled_buckets): only the shards persist. No bucket has memory of its
// own: a bucket borrows its buffer (ddp/pooled_buckets.hpp) when its first gradient arrives, the
// pre hook of each parameter's gradient accumulator writes the incoming gradient straight into
// its slot (param.grad stays undefined), and once the bucket's reduce-scatter has completed its
// block is added into the rank's shard and the buffer goes back. Every backward is reduced,
// micro-steps too, so gradient accumulation accumulates in the shards.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/communicator.hpp"
#include "ddp/bucket_plan.hpp"
#include "ddp/bucket_reduction.hpp"
#include "ddp/pooled_buckets.hpp"
#include "ddp/rank_waits.hpp"
#include "ddp/reducer_bucket.hpp"
#include "ddp/shard_plan.hpp"
#include "util/gradients_in_place.hpp"
#include "util/named_tensor.hpp"

namespace torch::autograd {
struct Node;
}

namespace ddpt {

// Timestamps of the last synchronised backward, for tests and the step-time split.
struct ReducerTrace {
  Clock::time_point backward_end;                  // finalize_backward() was entered
  std::vector<Clock::time_point> bucket_launched;  // handed to the communicator, by bucket
  std::vector<Clock::time_point> bucket_started;   // the backend began the all-reduce, by bucket
};

enum class GradientReduction {
  kAllReduce,      // every rank gets every summed gradient (plain data parallel)
  kReduceScatter,  // every rank gets the summed gradients of its blocks (ZeRO-1 to 3)
};

// What a backward is for: it decides whether the reducer's hooks reduce it.
enum class BackwardKind {
  kLocal,      // nothing reduced: gradients accumulate in .grad on this rank (a trial step)
  kMicroStep,  // a micro-step before the step's last: reduced under ZeRO-2 only, else kept local
  kStepEnd,    // the step's last micro-step: on return every rank has its summed gradients
};

struct ReducerOptions {
  int64_t first_bucket_bytes = 0;  // the first bucket (the last layers' gradients, ready first)
  int64_t bucket_bytes = 0;        // every other bucket
  // The precision buckets are reduced in (kFloat: the gradients' own).
  torch::ScalarType wire_dtype = torch::kFloat;
  GradientReduction reduction = GradientReduction::kAllReduce;
  // Buckets reduced as they are (no compression) are allocated by the communicator
  // (Communicator::allocate_buffer: node-shared memory for MPI on one node, NodeSharedMemory).
  bool backend_buffers = true;
  // ZeRO-1 and 2 only: every rank's parameters are the same memory.
  bool parameters_shared = false;
  // ZeRO-2 (with kReduceScatter): buckets borrow pooled buffers; only the shards persist.
  bool pooled_buckets = false;
  // ZeRO-3: the buckets, one per unit (ddp/unit_plan.hpp); empty: planned by size.
  std::vector<BucketSpec> plan;
  // Told of each wait for the reductions (ddp/rank_waits.hpp); null: nobody is told.
  RankWaits* waits = nullptr;
};

// Zeroing is lazy: zero_grad() marks every slot as holding nothing yet, and a slot's first
// gradient in the next backward is written over it instead of added to it: copied in by a pre
// hook on the parameter's gradient accumulator (which then receives nothing to add), or written
// there by the operation itself (ddpt::linear's weight product on CPUs, through GradientSlots). A
// slot that receives no gradient is zeroed when the backward ends. One pass instead of a fill,
// the operation's write and the add: the scaling MLP ran faster at 1 rank and at 2 on the 2-core
// machine (benchmarks.md, "Choices measured": gradients written, not added); on a GPU it saves the
// fill of every bucket (GPT-2 124M: 0.5 GB) and the read of the zeros.
class Reducer final : public GradientSlots {
 public:
  // `params`: the trainable parameters (requires_grad leaves) in registration order.
  Reducer(std::vector<NamedTensor> params, Communicator& comm, const ReducerOptions& options);
  ~Reducer() override;  // removes its hooks
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before loss.backward(). Whether this backward's gradients are reduced (reduces()) follows from
  // `kind`: when they are not, hooks do nothing and gradients just accumulate locally.
  void prepare_for_backward(BackwardKind kind);
  // Whether the backward being prepared is reduced (then finalize_backward() must follow it).
  bool reduces() const { return reducing_; }
  // Collective, after a reduced backward: launches buckets whose parameters got no gradient
  // (reduced as zeros), waits for every reduction. On return param.grad holds the sum over ranks
  // (ZeRO-1: shard_gradient(b) holds the sum of this rank's block of bucket b; ZeRO-2: the sum so
  // far of this step's micro-steps). At the step's end under ZeRO-1 and 2, one scalar all-reduce,
  // or the reduce-scatters themselves in shared memory, have given every rank the global sum of
  // squares for the norm and the finite check.
  void finalize_backward();
  // Clears every gradient for the next backward; gradients stay bucket views. The slots are only
  // marked (see above): until the next backward has written them, .grad still reads its old
  // values, as a gradient set to None cannot be read in PyTorch.
  void zero_grad();
  // GradientSlots: `grad` is a parameter's slot that holds nothing yet in this step.
  bool claim_for_overwrite(const torch::Tensor& grad) override;

  // L2 norm of all gradients (after finalize_backward: the same on every rank). Synchronises
  // with the device (not with ZeRO-1, where it was computed in finalize_backward).
  double gradient_norm() const;
  // The same norm as a float32 scalar on the buckets' device, computed there and not read back
  // (train.step_checks = device): a sum of squares above float32's range reads as inf. Not with
  // ZeRO-1.
  torch::Tensor gradient_norm_on_device() const;
  // Whether every gradient is finite (after finalize_backward: the same answer on every rank, since
  // a NaN or inf on any rank reaches every rank through the all-reduce).
  bool gradients_finite() const;
  // Multiplies every gradient by `factor` (gradient clipping), in place in the buckets (ZeRO-1:
  // in this rank's blocks).
  void scale_gradients(double factor);

  // ZeRO-1 and 2 only. This rank's block of each bucket, and where its parameters' pieces lie in
  // it.
  const std::vector<BucketShard>& shards() const { return shards_; }
  // The summed gradient of this rank's block of bucket `b` (after finalize_backward).
  const torch::Tensor& shard_gradient(size_t b) const { return shard_gradients_[b]; }
  // ZeRO-2: only the shards persist (param.grad stays undefined).
  bool gradients_sharded() const { return pooled_ != nullptr; }
  // Bytes of gradient memory this rank holds: buckets, their wire copies, shards and the pool.
  int64_t held_bytes() const;
  // The same once a backward has run: ZeRO-2's pool then holds at least the entries it lends
  // before a bucket waits (held_bytes() counts only the entries made so far).
  int64_t planned_bytes() const;
  // Collective: every rank's pieces of the parameters (updated by its optimizer) into every
  // rank's parameters. Overwrites the gradients, which zero_grad() clears before the next step.
  // With shared parameters: returns when every rank has updated its pieces.
  // With the parameters sharded (ZeRO-3), nothing: each unit is gathered when it next runs.
  void all_gather_parameters();
  bool parameters_shared() const { return parameters_shared_; }
  // ZeRO-3: this rank's block of each bucket's parameter values lives in `shards` (by bucket),
  // which the optimizer updates in place; `gradients_done(b)` is called once bucket b's gradients
  // are all in (its reduce-scatter launched), so that its unit's parameters can go.
  void shard_parameters(std::vector<torch::Tensor> shards,
                        std::function<void(size_t)> gradients_done);
  bool parameters_sharded() const { return !parameter_shards_.empty(); }
  const torch::Tensor& parameter_shard(size_t b) const { return parameter_shards_.at(b); }

  const std::vector<BucketSpec>& buckets() const { return plan_; }
  bool sharded() const { return reduction_ == GradientReduction::kReduceScatter; }
  // Whether every bucket is summed in memory the node's ranks share (ddp.shared_memory).
  bool buckets_in_shared_memory() const;
  const ReducerTrace& last_trace() const { return trace_; }

 private:
  // The constructor's two halves: every bucket's buffer (and wire copies), with each parameter's
  // gradient made a view of its slot; then the hooks that reduce a bucket once its gradients are
  // in.
  void allocate_buckets(torch::ScalarType wire_dtype, bool backend_buffers);
  void allocate_shards(torch::ScalarType wire_dtype);  // ZeRO-2: shards and the pool only
  void install_hooks();
  // Summed in shared memory (`squares_in_reduction`), a bucket's reduce-scatter also gives its
  // sum of squares (for the norm and the finite check) without another pass or collective.
  std::unique_ptr<BucketReduction> make_reduction(torch::ScalarType wire_dtype,
                                                  bool squares_in_reduction);
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;  // of the parameter's first element in the bucket
    torch::Tensor view;  // the parameter-shaped view of the bucket buffer (ZeRO-2: undefined)
  };

  friend class ReducerHook;
  friend class ReducerPreHook;
  void mark_ready(size_t param);  // called from the autograd engine
  // Pre hook of a parameter's gradient accumulator: the slot's first gradient in this step is
  // copied in, and the accumulator then receives nothing to add.
  torch::autograd::variable_list first_gradient(size_t param,
                                                const torch::autograd::variable_list& inputs);
  void put_gradient_in_slot(size_t param);
  void launch_ready_buckets();
  // Waits for bucket `b`'s reduction and puts its result where it belongs (ZeRO-2: added into
  // the shard, the pooled buffers given back).
  void complete_reduction(size_t b);
  // ZeRO-2: the parameter's slot in its bucket's borrowed buffer, borrowing one if the bucket
  // has none yet; the first gradient of a reduced backward is written there by the pre hook.
  torch::Tensor pooled_slot(size_t param);
  torch::autograd::variable_list pooled_first_gradient(
      size_t param, const torch::autograd::variable_list& inputs);
  void all_gather_through_pool();
  // Before an all-gather of bucket `b`: this rank's updated pieces into its block of the buffer.
  void fill_own_block(size_t b);
  // ZeRO-2: bucket `b`'s all-gather goes straight into its one parameter (no padding).
  bool gathered_in_place(size_t b) const;
  // ZeRO-1: the global sum of squared gradients, from this rank's blocks and one all-reduce.
  void reduce_gradient_squares();

  std::vector<NamedTensor> params_;
  Communicator& comm_;
  GradientReduction reduction_;
  bool parameters_shared_;
  // One rank without ZeRO-1: the gradients are already the sum; no collective, no wire copy.
  bool alone_;
  std::vector<BucketSpec> plan_;
  std::vector<BucketShard> shards_;  // ZeRO-1 to 3, by bucket
  // ZeRO-1 to 3, by bucket: the sum of this rank's block (ZeRO-1 in shared memory: that block of
  // the buffer itself, where the sum lands).
  std::vector<torch::Tensor> shard_gradients_;
  double gradient_squares_ = 0;  // ZeRO-1 to 3: global sum of squares after finalize_backward
  std::vector<ReducerBucket> buckets_;
  std::unique_ptr<PooledBuckets> pooled_;  // ZeRO-2 and 3, else null
  // Each full bucket's sum over the ranks (ddp/bucket_reduction.hpp), chosen from the mode.
  std::unique_ptr<BucketReduction> reduction_of_buckets_;
  std::vector<torch::Tensor> parameter_shards_;  // ZeRO-3, by bucket
  std::function<void(size_t)> gradients_done_;   // ZeRO-3
  std::vector<Slot> slots_;                      // by parameter index
  std::vector<char> ready_;                      // by parameter index
  std::vector<char> awaiting_;  // by parameter index: the slot holds nothing yet in this step
  std::unordered_map<const void*, size_t> param_by_slot_;  // slot data -> parameter index
  size_t next_bucket_ = 0;                                 // next bucket to launch
  size_t next_completed_ = 0;                              // next bucket to complete
  bool reducing_ = false;                                  // inside a reduced backward
  bool step_ends_ = false;                                 // ... the step's last
  ReducerTrace trace_;
  RankWaits* waits_;
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks_;
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, const void*>> pre_hooks_;
};

}  // namespace ddpt
