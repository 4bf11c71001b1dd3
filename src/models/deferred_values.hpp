// How a built-in model built without values (ParameterValues::kDeferred) gets them later, a unit
// at a time: while the model is built, each draw of initial values is recorded with the global
// generator's state before it, and the parameters it fills; materialize() replays the draws that
// fill the parameters asked for, from those states, so the values are the bits a whole build
// draws, in any order, and the generator is left as it was. Under ZeRO-3 each rank then holds one
// unit's values at a time while it shards them, never the whole model.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

namespace ddpt {

// What a built-in model's constructor leaves in its parameters.
enum class ParameterValues {
  kInitialised,  // the initial weights, drawn from the global generator (the deck's seed)
  // No memory: each unit's parameters are released as soon as it is built, and nothing is drawn.
  // For a model whose values come from a checkpoint into ZeRO-3's shards (eval and predict), so
  // that no rank ever holds it whole, not even while building it.
  kNone,
  // No memory, as kNone, but the initial values can be drawn later, any parameters at a time, with
  // the bits kInitialised gives (Model::materialize): ZeRO-3's training shards them unit by unit.
  // The global generator is left where kInitialised leaves it.
  kDeferred,
};

class DeferredValues {
 public:
  struct Draw {
    std::vector<torch::Tensor> params;  // what it fills (their memory restored first)
    torch::Tensor state;                // the global generator's state before it; undefined: none
    std::function<void()> run;
  };

  // The global CPU generator's state now (what a draw added next starts from).
  static torch::Tensor generator_now();

  void add(Draw draw) { draws_.push_back(std::move(draw)); }
  // A draw that replays the initialisation LibTorch's modules do when built (reset_parameters of
  // Linear, Conv2d, Embedding, LayerNorm and BatchNorm2d), for every leaf of `module` in
  // registration order (their order of construction), from `state`: the generator's state before
  // `module` was built. An Error for a leaf with parameters of another kind.
  void add_module(torch::nn::Module& module, torch::Tensor state);
  // Gives each of `params` that has no memory its memory and its initial values (and the other
  // parameters of the same draws theirs); the generator's state is left as it was.
  void materialize(const std::vector<torch::Tensor>& params) const;

 private:
  std::vector<Draw> draws_;
};

// The parameters of `module` (and its submodules) left without memory, shapes kept
// (util/releasable_storage.hpp), and the memory handed back.
void release_parameters(torch::nn::Module& module);

// What a built-in model's constructor does around each unit it builds, by its ParameterValues.
class UnitValues {
 public:
  UnitValues(ParameterValues values, DeferredValues& deferred)
      : values_(values), deferred_(deferred) {}
  ParameterValues values() const { return values_; }
  // Before building a unit: the generator's state, where kDeferred records it (else undefined).
  torch::Tensor before() const;
  // After building `unit` from `state` (before()): kDeferred records its initialisation (LibTorch's
  // own, DeferredValues::add_module); kNone and kDeferred leave it without memory.
  void built(torch::nn::Module& unit, torch::Tensor state) const;

 private:
  ParameterValues values_;
  DeferredValues& deferred_;
};

}  // namespace ddpt
