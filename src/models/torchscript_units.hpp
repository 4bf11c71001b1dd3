// ZeRO-3's units in a TorchScript model (ddp/unit_plan.hpp): the submodules that the model's
// forward calls and touches in no other way, found in its TorchScript graphs, and a copy of its
// forward that runs each call of one through the UnitRunner, as the built-in models run their
// blocks.
//
// A submodule (at any depth: "blocks.0", "transformer.h.3") is a unit when
//  - the model's forward only calls its forward, each time with a tensor among the arguments and
//    a tensor as the result (its parameters are gathered before the call, released after it, and
//    gathered again when backward reaches the result), and never inside an `if` or a loop (where
//    ranks with different batches could call it a different number of times: every rank must
//    gather the same units in the same order);
//  - no other method of the model names it, and nothing reads its attributes or reaches inside
//    it, or passes it (or a module above it) anywhere, or calls a module above it (whose forward
//    would call it without the runner);
//  - none of its parameters is also held outside it (weights tied across modules);
//  - it holds parameters.
// Everything else stays in the root unit, gathered for the whole forward. A model whose forward
// is one opaque call (a Sequential as its only submodule) has one unit and the root.
// Not seen: a value made outside an `if` or a loop and used only inside it (a unit's output, a
// weight read before the `if`); its gradient too may come on some ranks only.
#pragma once

#include <torch/script.h>

#include <memory>
#include <string>
#include <vector>

#include "models/unit_runner.hpp"

namespace torch::jit {
struct GraphFunction;
}

namespace ddpt {

struct TorchScriptUnits {
  // Each unit's path ("blocks.0"), in the order forward first calls them.
  std::vector<std::string> paths;
  // What forward uses inside an `if` or a loop: paths of submodules ("branch") and of parameters
  // read from a module ("alpha", "scale.weight"). What they hold may get a gradient on some ranks
  // and not on others.
  std::vector<std::string> conditional;
  // `module`'s forward with each call of a unit routed through the runner that `*runner` points
  // to when it runs (none: called plainly); null where there are no units. Takes the module
  // object and the input.
  std::shared_ptr<torch::jit::GraphFunction> forward;
};

// `runner` must outlive the returned function's use.
TorchScriptUnits find_units(const torch::jit::Module& module, UnitRunner* const* runner);

}  // namespace ddpt
