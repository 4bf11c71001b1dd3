// The data-parallel engine in one object: makes every rank start from rank 0's parameters and
// buffers, and averages gradients across ranks during backward (through the Reducer).
//
// With ZeRO-1 or 2 on one node (MPI, ddp.shared_memory), the parameters move into one copy that the
// node's ranks share: each rank's optimizer updates its block of that copy in place, so no rank
// gathers the others' updates, and the forward and backward of all ranks read the same weights.
// (On the 2-core VM this was faster than ZeRO-1's all-gather, and sometimes slower than plain
// data parallel: benchmarks.md, "Choices measured": shared ZeRO-1 parameters.) Ordering: a rank
// updates only after every rank's backward is done (the gradient reductions wait for all), and a
// rank starts the next forward only after every rank's update (Reducer::all_gather_parameters).
#pragma once

#include <memory>
#include <vector>

#include "config/ddp_defaults.hpp"
#include "ddp/rank_waits.hpp"
#include "ddp/reducer.hpp"
#include "ddp/sharded_parameters.hpp"
#include "ddp/sharding_plan.hpp"
#include "models/parameter_source.hpp"

namespace ddpt {

struct DataParallelOptions {
  double first_bucket_mb = kDefaultFirstBucketMiB;
  double bucket_mb = kDefaultBucketMiB;
  // What is sharded (ZeRO-1 to 3), the wire's precision, ZeRO-3's prefetch, and whether ZeRO-1
  // and 2 share one copy of the parameters on a node (setup/sharding.hpp decides it).
  ShardingPlan sharding;
  bool shared_memory = true;  // ddp.shared_memory: buckets where the communicator sums fastest
  // ZeRO-3: each rank keeps 1/N of the parameters, a unit of them gathered while it runs
  // (ddp/sharded_parameters.hpp). The units are the model's blocks, named by these prefixes, and
  // the root.
  std::vector<std::string> block_prefixes;
  // ZeRO-3: the parameters forward may use on some ranks only (ddp/unit_plan.hpp: their buckets
  // come last).
  std::vector<std::string> used_on_some_ranks;
  // ZeRO-3, parameters built without values: gives a unit's parameters theirs as it is sharded.
  std::function<void(const std::vector<NamedTensor>&)> materialize;
  // ZeRO-3, model.init: where each rank reads its own pieces of the parameters the source holds
  // (ddp/sharded_parameters.hpp); null: rank 0's values, broadcast.
  ParameterSource* source = nullptr;
};

// Collective: every rank's tensors take rank 0's values (in place, in the given order).
void broadcast_from_rank0(const std::vector<NamedTensor>& tensors, Communicator& comm);

class DataParallel {
 public:
  // Collective: broadcasts `params` and `buffers` from rank 0, then sets up the buckets.
  DataParallel(std::vector<NamedTensor> params, std::vector<NamedTensor> buffers,
               Communicator& comm, const DataParallelOptions& options);

  // Runs loss.backward(). At the step's end (the last micro-step of an optimizer step) it is
  // collective and, on return, every parameter's .grad holds the average over all ranks (ZeRO-1
  // and 2: every rank's shards hold theirs). Under ZeRO-2 the micro-steps before it are
  // collective too, each reduced into the shards; a kLocal backward never is.
  void backward(const torch::Tensor& loss, BackwardKind kind);
  void zero_grad() { reducer_->zero_grad(); }
  // Collective: every rank takes rank 0's buffers (batch-norm statistics), as PyTorch DDP's
  // broadcast_buffers does before each forward, so that evaluation and checkpoints see one set.
  // Nothing to do (and no communication) for models without buffers.
  void sync_buffers() {
    if (!buffers_.empty()) broadcast_from_rank0(buffers_, comm_);
  }

  // Whether every rank's parameters are one copy in memory the node's ranks share.
  bool parameters_shared() const { return reducer_->parameters_shared(); }
  const Reducer& reducer() const { return *reducer_; }
  Reducer& reducer() { return *reducer_; }
  // Tells `observer` of every wait for the other ranks in forward and backward from now on
  // (ddp/rank_waits.hpp); null: nobody. Not during a forward or backward.
  void observe_waits(WaitObserver* observer) { waits_.observe(observer); }
  // ZeRO-3: the units the model runs its blocks through; null otherwise.
  ShardedParameters* sharded_parameters() { return units_.get(); }
  const ShardedParameters* sharded_parameters() const { return units_.get(); }

 private:
  // ZeRO-3: the parameters cut into units and sharded, then the reducer with a bucket per unit.
  void shard_by_unit(std::vector<NamedTensor> params, const DataParallelOptions& options,
                     ReducerOptions reducer);

  Communicator& comm_;
  std::vector<NamedTensor> buffers_;
  RankWaits waits_;                           // before the reducer and units, which tell it
  std::unique_ptr<ShardedParameters> units_;  // before reducer_, whose hooks call it
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace ddpt
