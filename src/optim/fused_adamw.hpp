// AdamW with the update of each parameter done in one pass over memory, for CPU float32
// parameters. LibTorch's AdamW::step runs about ten tensor operations per parameter (and
// allocates the denominator), each a full pass over parameter, gradient and moments; on a CPU the
// optimizer is memory-bound, so that was a third of a step of the scaling MLP. The arithmetic and
// its rounding are LibTorch's (decoupled weight decay, then the moments, then
// p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)), in float32, including where
// LibTorch's kernels fuse a multiply-add, so training with it equals training with LibTorch's
// AdamW bit for bit. make_optimizer builds it for optim.type = adamw.
//
// On a GPU (LibTorch 2.x, every parameter a CUDA float32 tensor) each parameter group is updated
// by LibTorch's multi-tensor kernel at::_fused_adamw_ (torch.optim.AdamW(fused=True)): a handful
// of launches per step instead of about ten per parameter, which for GPT-2 124M's 148 parameters
// were 1,500 small launches issued after the step's gradient-norm synchronisation, with the GPU
// idle while the CPU issued them.
//
// The state is LibTorch's AdamWParamState (step, exp_avg, exp_avg_sq), so checkpoints and
// optimizer_state.cpp see an ordinary AdamW. Parameters of any other kind (other dtypes, a mix of
// devices) are updated by LibTorch's own step.
#pragma once

#include <torch/torch.h>

#include <unordered_map>

namespace ddpt {

class FusedAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;

  // train.step_checks = device: the next step() divides every gradient by `grad_divisor` (a
  // float scalar: clipping; undefined: none) and is skipped, its step counts included, where
  // `found_inf` (a float scalar: 1 or 0) is 1. Both stay on the parameters' device: the update's
  // kernels read them, the host does not.
  void gate_next_step(torch::Tensor found_inf, torch::Tensor grad_divisor);
  // The step counts as the device kept them (a skipped step did not count) into the state that
  // checkpoints save: one read, for a metrics row or a checkpoint.
  void settle_step_counts();

 private:
  void cpu_step();
  void cuda_step();
  // Parameters neither kind fuses: LibTorch's AdamW, after the gate's verdict (read back).
  torch::Tensor unfused_step(LossClosure closure);
  // The fused CUDA kernel reads each parameter's step count from a float32 tensor on the GPU; it
  // follows AdamWParamState::step (the checkpointed count), refilled when they differ (a resume).
  struct DeviceStep {
    torch::Tensor count;
    int64_t value = -1;
  };
  std::unordered_map<const void*, DeviceStep> device_steps_;
  torch::Tensor found_inf_;     // for the next step only (gate_next_step)
  torch::Tensor grad_divisor_;  // for the next step only
};

}  // namespace ddpt
