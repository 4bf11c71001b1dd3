// ZeRO-1 (ddp.zero = 1): each rank runs the optimizer on its shard of the parameters only, so
// each holds 1/N of the optimizer state (AdamW: 8 bytes per parameter value, the largest memory
// cost of data parallel training after the activations).
//
// The reducer reduce-scatters the gradient buckets (ddp/reducer.hpp), so a rank holds the summed
// gradient of its block of each bucket only. Each of its pieces (ddp/shard_plan.hpp: the run of a
// parameter's elements inside the rank's block) becomes a 1-D tensor over the parameter's own
// memory, with its part of the block as .grad, and one ordinary optimizer from make_optimizer
// updates the pieces (weight decay as their parameter's). Then the reducer all-gathers every
// rank's updated pieces into every rank's parameters. Elementwise optimizers (AdamW, SGD) give
// each value the update the unsharded optimizer would.
//
// In checkpoints the state looks like an unsharded optimizer's (/optimizer/<param>/<field> in the
// parameter's shape): each rank writes its pieces into the full-size datasets, collectively, and
// on load reads the elements it owns now. So a checkpoint loads with or without ZeRO, on any
// number of ranks, and h5py and `ddptrain inspect` read it unchanged.
#pragma once

#include <string>
#include <vector>

#include "optim/distributed_optimizer.hpp"

namespace ddpt {

class ShardedOptimizer final : public DistributedOptimizer {
 public:
  // `params`: the reducer's parameters, in its order; `reducer` reduce-scatters.
  ShardedOptimizer(const OptimizerSpec& config, std::vector<NamedTensor> params, Reducer& reducer);
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  // Collective: updates this rank's pieces, then gathers every rank's into every parameter.
  void step() override;
  int64_t updated_values() const override;
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  struct Piece {
    size_t param = 0;
    int64_t first = 0;    // first element of the piece in the flattened parameter
    torch::Tensor value;  // aliases the parameter's memory; .grad is its gradient block
  };
  // The piece of parameter `param` this rank owns, or nullptr.
  const Piece* piece_of(size_t param) const;
  // Whether the optimizer keeps state at all once it has stepped (SGD without momentum: none).
  bool keeps_state() const;

  OptimizerSpec config_;
  std::vector<NamedTensor> params_;
  Reducer& reducer_;
  std::vector<Piece> pieces_;
  std::vector<int> piece_index_;  // by parameter: index into pieces_, or -1
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // AdamW's step count of each parameter: kept here because the rank that writes a replicated
  // value (rank 0) may own no piece of the parameter.
  std::vector<int64_t> steps_;
  bool has_state_ = false;  // every rank alike: state exists (the file then has /optimizer/<param>)
};

}  // namespace ddpt
