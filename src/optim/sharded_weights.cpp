#include "optim/sharded_weights.hpp"

#include "util/error.hpp"

namespace ddpt {

ShardedWeights::ShardedWeights(std::vector<NamedTensor> params,
                               const std::vector<BucketShard>& shards,
                               const std::vector<torch::Tensor>& values)
    : params_(std::move(params)), runs_(params_.size()) {
  if (shards.size() != values.size()) {
    throw Error("ShardedWeights: one block of values per bucket", ExitCode::kInternal,
                Raised::kAllRanks);
  }
  for (size_t i = 0; i < params_.size(); ++i) index_.emplace(params_[i].name, i);
  for (size_t b = 0; b < shards.size(); ++b) {
    for (const ShardPiece& piece : shards[b].pieces) {
      runs_[piece.param] =
          Run{piece.param_offset, values[b].narrow(0, piece.block_offset, piece.numel)};
    }
  }
}

void ShardedWeights::save(StateWriter& model) const {
  // Every rank writes every parameter (collective); a rank that holds none of one writes nothing.
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& param = params_[i].tensor;
    const Run& run = runs_[i];
    model.tensor_part(
        params_[i].name, param.sizes().vec(), run.first,
        run.value.defined() ? run.value : torch::empty({0}, param.options().requires_grad(false)));
  }
}

void ShardedWeights::read(const StateReader& group, bool only_present) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Run& run = runs_[i];
    if (!run.value.defined() || (only_present && !group.has(params_[i].name))) continue;
    const torch::Tensor stored = group.tensor_part(params_[i].name, run.first, run.value.numel());
    if (stored.numel() != run.value.numel()) {
      throw DataError("model/" + params_[i].name + " holds fewer values than the model's",
                      Raised::kThisRank);
    }
    run.value.copy_(stored);
  }
}

}  // namespace ddpt
