// ZeRO-3's parameters in checkpoints (state/checkpointed.hpp, CheckpointedWeights): each rank
// writes the runs of parameter values its shard holds into the full-size /model datasets,
// collectively, and on load reads the runs it holds now, as ShardedOptimizer does with the
// optimizer's state. So a ZeRO-3 checkpoint loads with any ddp.zero on any rank count, and h5py
// reads it as any other.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ddp/shard_plan.hpp"
#include "state/checkpointed.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

class ShardedWeights final : public CheckpointedWeights {
 public:
  // `params` as their units hold them (ddp/sharded_parameters.hpp): `shards` says where this
  // rank's runs of each lie in `values`, its blocks of the units.
  ShardedWeights(std::vector<NamedTensor> params, const std::vector<BucketShard>& shards,
                 const std::vector<torch::Tensor>& values);
  bool holds(const std::string& name) const override { return index_.count(name) > 0; }
  void save(StateWriter& model) const override;
  void load(const StateReader& model) override { read(model, /*only_present=*/false); }
  void load_present(const StateReader& group) override { read(group, /*only_present=*/true); }

 private:
  void read(const StateReader& group, bool only_present);
  struct Run {
    int64_t first = 0;    // in the flattened parameter
    torch::Tensor value;  // this rank's values there (a view of its shard); undefined: none
  };
  std::vector<NamedTensor> params_;
  std::vector<Run> runs_;  // by parameter
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace ddpt
