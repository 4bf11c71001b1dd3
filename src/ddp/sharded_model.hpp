// A model whose parameters ZeRO-3 shards (ddp/sharded_parameters.hpp), as the trainer and the
// evaluation call it: each forward holds the root unit, and the model runs its blocks through the
// units, each gathered while it runs. Everything else is the model's own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ddp/sharded_parameters.hpp"
#include "models/model.hpp"

namespace ddpt {

class ShardedModel final : public Model {
 public:
  // `model`'s blocks run through `units` from now on, for as long as this lives.
  ShardedModel(Model& model, ShardedParameters& units) : model_(model), units_(units) {
    model_.run_blocks_through(&units_);
  }
  ~ShardedModel() override { model_.run_blocks_through(nullptr); }
  ShardedModel(const ShardedModel&) = delete;
  ShardedModel& operator=(const ShardedModel&) = delete;

  torch::Tensor forward(const torch::Tensor& inputs) override {
    const ShardedParameters::Forward held(units_);
    return model_.forward(inputs);
  }
  std::optional<torch::Tensor> chunked_loss(const torch::Tensor& inputs,
                                            const torch::Tensor& targets, int64_t rows) override {
    const ShardedParameters::Forward held(units_);
    return model_.chunked_loss(inputs, targets, rows);
  }
  std::vector<NamedTensor> named_parameters() override { return model_.named_parameters(); }
  std::vector<NamedTensor> named_buffers() override { return model_.named_buffers(); }
  void train(bool on) override { model_.train(on); }
  void to(torch::Device device) override { model_.to(device); }
  std::string describe() const override { return model_.describe(); }
  double forward_flops_per_sample() const override { return model_.forward_flops_per_sample(); }
  std::vector<std::string> unit_prefixes() const override { return model_.unit_prefixes(); }
  bool forwards_in_lockstep() const override { return true; }

 private:
  Model& model_;
  ShardedParameters& units_;
};

}  // namespace ddpt
