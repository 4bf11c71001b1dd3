// What the trainer needs of a model, whether built in (C++) or loaded from TorchScript.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/deferred_values.hpp"
#include "models/token_decoder.hpp"
#include "models/unit_runner.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

class Model {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor forward(const torch::Tensor& inputs) = 0;
  // Parameters in registration order (names as in a state dict: "layers.0.weight"), each tensor
  // once: a tensor held by two attributes (tied weights) under the first of its names.
  virtual std::vector<NamedTensor> named_parameters() = 0;
  virtual std::vector<NamedTensor> named_buffers() = 0;
  virtual void train(bool on) = 0;
  virtual void to(torch::Device device) = 0;
  virtual std::string describe() const = 0;
  // Floating-point operations of one sample's forward pass (a multiply-add counts 2); 0 where
  // unknown (TorchScript). Training costs about 3x this (backward is about twice the forward).
  virtual double forward_flops_per_sample() const { return 0; }
  // Next-token models whose last layer is a linear head: the mean cross-entropy of `inputs`
  // against `targets` with the head's logits made `rows` tokens at a time, never all at once
  // (models/chunked_cross_entropy.hpp). Empty where the model has no such path.
  virtual std::optional<torch::Tensor> chunked_loss(const torch::Tensor& /*inputs*/,
                                                    const torch::Tensor& /*targets*/,
                                                    int64_t /*rows*/) {
    return std::nullopt;
  }
  // ZeRO-3's units (ddp/unit_plan.hpp): the name prefix of each block's parameters, in the order
  // forward runs the blocks ("h.0.", "h.1.", ...); empty where the model names no blocks.
  virtual std::vector<std::string> unit_prefixes() const { return {}; }
  // The parameters (names) that forward may use on some ranks and not on others in one step
  // (inside an `if` or a loop on the data): a rank may get no gradient for them. None in the
  // built-in models.
  virtual std::vector<std::string> conditional_parameters() const { return {}; }
  // From now on each block runs through `runner` (null: plainly).
  virtual void run_blocks_through(UnitRunner* /*runner*/) {}
  // ParameterValues::kDeferred: gives those of `params` (this model's) that have no memory their
  // memory and initial values; the global generator is left as it was. Nothing where they have
  // memory (every other model).
  virtual void materialize(const std::vector<NamedTensor>& /*params*/) {}
  // Whether every rank must run every forward, data or not (ZeRO-3: each block's parameters are
  // gathered from every rank): a rank whose rows are done runs one of them again.
  virtual bool forwards_in_lockstep() const { return false; }
  // How `ddptrain generate` continues a prompt with this next-token model.
  enum class Decoding {
    kWholeWindow,       // each new token reruns the whole window (forward)
    kCache,             // decoder(): a cache of keys and values; a batch's prompts of one length
    kCacheWithPadding,  // decoder() also takes prompts of different lengths, left-padded
  };
  virtual Decoding decoding() const { return Decoding::kWholeWindow; }
  // Where decoding() is not kWholeWindow: a decoder (models/token_decoder.hpp) for one row per
  // element of `padding` (the slots before each row's prompt: all 0 unless kCacheWithPadding) of
  // at most `capacity` slots each.
  virtual std::unique_ptr<TokenDecoder> decoder(const std::vector<int64_t>& /*padding*/,
                                                int64_t /*capacity*/) {
    return nullptr;
  }
};

int64_t parameter_count(Model& model);

// The model's buffers and its parameters that do not train (frozen) to `device`, the others left
// where they are: ZeRO-3 moves those a unit at a time (ddp/sharded_parameters.hpp).
void move_all_but_trainable(Model& model, torch::Device device);

}  // namespace ddpt
