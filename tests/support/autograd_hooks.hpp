// Hooks that let a test watch a leaf's gradient accumulator (AccumulateGrad): what it receives and
// whether its post hooks run. Attach them to the node from torch::autograd::impl::grad_accumulator,
// and hold that shared_ptr for the test's length: the leaf keeps only a weak reference to it.
#pragma once

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace ddpt::testing {

// Pre hook: records whether the gradient the accumulator receives is defined (undefined when an
// operation already wrote it into the leaf's .grad: util/gradients_in_place.hpp). It sees what
// the hooks added before it hand on.
class ReceivedGradient final : public torch::autograd::FunctionPreHook {
 public:
  explicit ReceivedGradient(int* defined) : defined_(defined) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& inputs) override {
    *defined_ = inputs.at(0).defined() ? 1 : 0;
    return inputs;
  }

 private:
  int* defined_;
};

// Post hook: counts the accumulator's runs (the reducer's post hook marks a gradient ready then).
class PostHookRuns final : public torch::autograd::FunctionPostHook {
 public:
  explicit PostHookRuns(int* runs) : runs_(runs) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    ++*runs_;
    return outputs;
  }

 private:
  int* runs_;
};

}  // namespace ddpt::testing
