// ZeRO-3 (ddp.zero = 3): each rank holds 1/N of the parameters. A unit's parameters
// (ddp/unit_plan.hpp) are all-gathered just before the unit runs and released after it, gathered
// again just before its backward and released once its gradients are reduce-scattered (the Reducer,
// as under ZeRO-2, with one bucket per unit). With prefetch, the next unit's all-gather runs while
// the current unit computes: in forward the unit after it, in backward the one before it.
//
// Each unit's parameters are views of one flat buffer, padded to a multiple of the world size and
// cut into one block per rank as the unit's gradient bucket is (ddp/shard_plan.hpp). Rank r keeps
// block r of every unit (its shard, which its optimizer updates in place) and the buffer's memory
// exists only while the unit is gathered (util/releasable_storage.hpp). The root unit (embeddings,
// final norm, head; one buffer per bucket) is gathered at the start of a forward and held until
// its gradients are in. Under autocast a block's weights are cast when its unit is gathered for a
// forward, and the casts go and come back with the unit (ddp/unit_casts.hpp).
//
// With every rank on one node (MPI, ddp.shared_memory), a unit is gathered into memory the node's
// ranks share instead (comm/node_all_gather.hpp): a few slots of the largest unit's size, as many
// as units are gathered at once (the same on every rank: the ranks gather and release in the same
// order). A gather takes a free slot, points the unit's storage there, copies the rank's shard
// into its block and waits for the others'; a release frees the slot. So the node holds a few
// units, not one per rank that gathers them, and nothing is sent.
//
// Collectives match across ranks because every rank runs the same graph: gathers are launched in
// forward in unit order, and in backward from the hooks on each unit's output, which the autograd
// engine reaches in the same order on every rank as it does the reducer's hooks.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "ddp/rank_waits.hpp"
#include "ddp/shard_plan.hpp"
#include "ddp/unit_casts.hpp"
#include "ddp/unit_plan.hpp"
#include "models/parameter_source.hpp"
#include "models/unit_runner.hpp"
#include "util/named_tensor.hpp"
#include "util/releasable_storage.hpp"

namespace ddpt {

class ShardedParameters final : public UnitRunner {
 public:
  struct Options {
    bool prefetch = false;      // ddp.prefetch
    bool shared_memory = true;  // gather into node-shared buffers where the communicator can
    // False where the parameters have no memory (a model built to be read from a checkpoint,
    // models/model.hpp): the shards start at zero, for the checkpoint's values.
    bool values = true;
    // Where set: gives the parameters of a unit memory and values just before the unit is cut (a
    // model built with its values deferred, models/deferred_values.hpp), so that no rank holds
    // more than one unit's values at a time.
    std::function<void(const std::vector<NamedTensor>&)> materialize;
    // Where set (model.init): each rank fills its own blocks, nothing is broadcast; a piece of a
    // parameter the source holds is read from it, of any other copied from its values
    // (materialized first).
    ParameterSource* source = nullptr;
    // Told of each wait for the other ranks' blocks (ddp/rank_waits.hpp); null: nobody is told.
    RankWaits* waits = nullptr;
  };
  // Collective. Cuts `params` (on the host or the communicator's device) into units, a unit at a
  // time: its buffer on the communicator's device takes rank 0's values (broadcast; with
  // Options::source each rank fills its own block instead), each rank keeps its blocks, and every
  // parameter becomes a view of its unit's buffer, released until the unit runs. They stay views
  // of released memory once this is gone: gather them (Whole) to read them first.
  ShardedParameters(std::vector<NamedTensor> params, UnitPlan plan, Communicator& comm,
                    const Options& options);
  ShardedParameters(const ShardedParameters&) = delete;
  ShardedParameters& operator=(const ShardedParameters&) = delete;

  // RAII around a model's forward: the root unit gathered; released at the end where no backward
  // will follow (autograd off), else held for the backward.
  class Forward {
   public:
    explicit Forward(ShardedParameters& units);
    ~Forward();
    Forward(const Forward&) = delete;
    Forward& operator=(const Forward&) = delete;

   private:
    ShardedParameters& units_;
  };

  // RAII, collective: every unit gathered while it lives, so that each parameter reads whole (to
  // compare or export the trained model); released after.
  class Whole {
   public:
    explicit Whole(ShardedParameters& units);
    ~Whole() { units_.release_all(); }
    Whole(const Whole&) = delete;
    Whole& operator=(const Whole&) = delete;

   private:
    ShardedParameters& units_;
  };

  void enter(size_t unit) override;
  void leave(size_t unit, const torch::Tensor& output) override;
  // Bucket `b`'s gradients are all in (the reducer launched its reduce-scatter): its unit's
  // gathered parameters go.
  void gradients_done(size_t bucket) { release(bucket); }
  // After a backward: every unit released (a local backward reduces nothing and says nothing).
  void release_all();

  // This rank's block of bucket `b`'s parameter values (what its optimizer updates).
  const torch::Tensor& shard(size_t bucket) const { return units_[bucket].shard; }
  std::vector<torch::Tensor> shards() const;
  // Where this rank's blocks lie in the parameters (ddp/shard_plan.hpp), by bucket.
  const std::vector<BucketShard>& shard_plan() const { return shards_; }
  // Bytes of parameters this rank keeps; of the largest block's unit, gathered whole (all its
  // buckets) while the block runs, two at a time with prefetch; and of the root unit, gathered
  // whole at the start of a forward and held until its gradients are in (padding included).
  int64_t held_bytes() const;
  int64_t largest_unit_bytes() const;
  int64_t root_unit_bytes() const;
  // Whether every unit is gathered into memory the node's ranks share.
  bool gathers_in_shared_memory() const;

 private:
  enum class State { kReleased, kGathering, kGathered };
  static constexpr size_t kNoUnit = static_cast<size_t>(-1);
  // A node-shared buffer of the largest unit's size, which one unit at a time is gathered into.
  struct Slot {
    torch::Tensor memory;
    size_t unit = kNoUnit;  // the bucket gathered there now
  };
  struct Unit {
    torch::Tensor gathered;  // flat, padded; memory only while gathered
    size_t slot = kNoUnit;   // while gathered in node-shared memory: its slot there
    torch::Tensor shard;     // this rank's block, kept
    std::shared_ptr<Work> work;
    State state = State::kReleased;
  };
  void gather(size_t bucket);   // launched, not waited for; nothing if gathered or in flight
  void wait(size_t bucket);     // gathered on return
  void release(size_t bucket);  // waits for a gather in flight first; its casts go too
  void cast(size_t bucket);     // gathered for a forward: cast where autocast is on
  // The buckets of block `unit`; none where it has no trainable parameters or is no block.
  const std::vector<size_t>& block_buckets(int64_t unit) const;
  int64_t unit_bytes(size_t unit) const;  // gathered whole, all its buckets
  void before_backward(size_t unit);
  // This rank's block of bucket `b` from options.source (Options::source).
  void fill_block(size_t b, const Options& options, torch::Tensor block);
  // Collective: one more node-shared slot (none where shared memory is refused).
  void add_slot();
  // A free slot for bucket `bucket`, its storage pointed there (a new slot where none is free,
  // collectively); kNoUnit where none can be had.
  size_t take_slot(size_t bucket);

  std::vector<NamedTensor> params_;
  UnitPlan plan_;
  std::vector<BucketShard> shards_;
  Communicator& comm_;
  bool prefetch_;
  RankWaits* waits_;
  std::vector<Unit> units_;  // by bucket
  StoragePool memory_;       // the gathered units' host memory, used again (releasable_storage)
  UnitCasts casts_;          // their weights in autocast's type, while gathered in a forward
  bool shared_ = false;      // units gathered into node-shared slots
  std::vector<Slot> slots_;
  const std::vector<size_t> none_;
};

}  // namespace ddpt
