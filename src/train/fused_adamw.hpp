// AdamW with the update of each parameter done in one pass over memory, for CPU float32
// parameters. LibTorch's AdamW::step runs about ten tensor operations per parameter (and
// allocates the denominator), each a full pass over parameter, gradient and moments; on a CPU the
// optimizer is memory-bound, so that was a third of a step of the scaling MLP. The arithmetic and
// its rounding are LibTorch's (decoupled weight decay, then the moments, then
// p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)), in float32, including where
// LibTorch's kernels fuse a multiply-add, so training with it equals training with LibTorch's
// AdamW bit for bit. make_optimizer builds it for optim.type = adamw.
//
// The state is LibTorch's AdamWParamState (step, exp_avg, exp_avg_sq), so checkpoints and
// optimizer_state.cpp see an ordinary AdamW. Parameters that are not CPU float32 contiguous
// tensors (CUDA, other dtypes) are updated by LibTorch's own step.
#pragma once

#include <torch/torch.h>

namespace ddpt {

class FusedAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace ddpt
