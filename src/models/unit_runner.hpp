// How a model runs its blocks under ZeRO-3 (ddp.zero = 3): through a runner that gathers a
// block's parameters before it runs and releases them after (ddp/sharded_parameters.hpp). A model
// without a runner calls its blocks itself.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <functional>

namespace ddpt {

class UnitRunner {
 public:
  using Block = std::function<torch::Tensor(const torch::Tensor&)>;
  virtual ~UnitRunner() = default;
  // Before unit `unit` (the model's block `unit`, in the order of its unit_prefixes) runs: its
  // parameters gathered on return.
  virtual void enter(size_t unit) = 0;
  // After it ran, with its output: its parameters released, and gathered again before the
  // backward of `output` reaches the unit.
  virtual void leave(size_t unit, const torch::Tensor& output) = 0;

  // `block(input)` with the parameters of unit `unit` gathered while it runs.
  torch::Tensor run(size_t unit, const Block& block, const torch::Tensor& input) {
    enter(unit);
    torch::Tensor output = block(input);
    leave(unit, output);
    return output;
  }
};

// `block(input)` through `runner` where there is one.
inline torch::Tensor run_unit(UnitRunner* runner, size_t unit, const UnitRunner::Block& block,
                              const torch::Tensor& input) {
  return runner ? runner->run(unit, block, input) : block(input);
}

}  // namespace ddpt
