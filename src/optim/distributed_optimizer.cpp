#include "optim/distributed_optimizer.hpp"

#include "optim/optimizer.hpp"
#include "optim/sharded_optimizer.hpp"

namespace ddpt {

ReplicatedOptimizer::ReplicatedOptimizer(const OptimizerSpec& config,
                                         const std::vector<NamedTensor>& params)
    : optimizer_(make_optimizer(config, params)),
      checkpoint_(
          std::make_unique<OptimizerCheckpoint>(*optimizer_, params, choice_name(config.type))) {
  for (const auto& p : params) values_ += p.tensor.numel();
}

std::unique_ptr<DistributedOptimizer> make_distributed_optimizer(
    const OptimizerSpec& optim, const std::vector<NamedTensor>& params, Reducer& reducer) {
  if (reducer.sharded()) return std::make_unique<ShardedOptimizer>(optim, params, reducer);
  return std::make_unique<ReplicatedOptimizer>(optim, params);
}

}  // namespace ddpt
