#include "optim/ema.hpp"

#include <torch/torch.h>

#include "optim/sharded_weights.hpp"

namespace ddpt {
namespace {

// Whole averages, one replicated tensor per parameter.
class WholeAverages final : public CheckpointedWeights {
 public:
  explicit WholeAverages(std::vector<NamedTensor> averages) : averages_(std::move(averages)) {}
  bool holds(const std::string& /*name*/) const override { return true; }
  void save(StateWriter& group) const override {
    for (const auto& a : averages_) group.tensor(a.name, a.tensor);
  }
  void load(const StateReader& group) override {
    torch::NoGradGuard no_grad;
    for (const auto& a : averages_) {
      a.tensor.copy_(stored_as(group.tensor(a.name), a.tensor, a.name));
    }
  }
  void load_present(const StateReader& group) override { load(group); }

 private:
  std::vector<NamedTensor> averages_;
};

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& live) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> copies;
  for (const auto& t : live) copies.push_back(t.detach().clone());
  return copies;
}

}  // namespace

Ema::Ema(const std::vector<NamedTensor>& params, double decay) : decay_(decay) {
  std::vector<NamedTensor> named;
  for (const auto& p : params) live_.push_back(p.tensor.detach());
  averages_ = clones(live_);
  for (size_t i = 0; i < params.size(); ++i) named.push_back({params[i].name, averages_[i]});
  stored_ = std::make_unique<WholeAverages>(std::move(named));
}

Ema::Ema(const std::vector<NamedTensor>& params, const std::vector<BucketShard>& plan,
         const std::vector<torch::Tensor>& shards, double decay)
    : live_(shards), averages_(clones(shards)), decay_(decay) {
  stored_ = std::make_unique<ShardedWeights>(params, plan, averages_);
}

void Ema::update(const torch::Tensor& skipped) {
  torch::NoGradGuard no_grad;
  if (skipped.defined()) {
    // The weight as a tensor, 0 for a skipped step: decided without reading the flag back.
    const torch::Tensor weight = (1 - skipped) * (1.0 - decay_);
    for (size_t i = 0; i < live_.size(); ++i) averages_[i].lerp_(live_[i], weight);
    return;
  }
  // average += (1 - decay) x (live - average), i.e. decay x average + (1 - decay) x live
  for (size_t i = 0; i < live_.size(); ++i) averages_[i].lerp_(live_[i], 1.0 - decay_);
}

void Ema::swap() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < live_.size(); ++i) {
    torch::Tensor live = live_[i].clone();
    live_[i].copy_(averages_[i]);
    averages_[i].copy_(live);
  }
}

void Ema::save(StateWriter& root) const {
  stored_->save(*root.group("ema"));
}

void Ema::load(const StateReader& root) {
  stored_->load(*root.group(root.has("ema") ? "ema" : "model"));
}

}  // namespace ddpt
