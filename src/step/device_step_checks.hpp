// train.step_checks = device: the gradient gate's decisions made on the device the step runs on,
// with nothing read back inside a step. After backward: the global norm of the averaged gradients
// (float32, a multi-tensor launch), whether it is finite, and, with optim.clip, the divisor that
// clips them; both go to the optimizer's next step (FusedAdamW::gate_next_step), whose kernels
// skip the update where the flag is set and divide the gradients as they read them. The skipped
// steps are counted on the device too, with the longest run of them, and read at the next metrics
// row or checkpoint (settle): the row warns of the steps skipped since the last one, and
// train.max_bad_steps in a row end the run there (NumericalError, exit 4) instead of at once.
// What cannot be decided without a read (fp16's loss scale, the spike guard, ZeRO-1's sharded
// update, LibTorch's own optimizers) stays with the host checks (step/gradient_gate.hpp).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "config/choices.hpp"
#include "ddp/reducer.hpp"
#include "optim/fused_adamw.hpp"

namespace ddpt {

// Added to the norm before dividing by it when clipping, on the host and on the device (as
// torch.nn.utils.clip_grad_norm_ does).
inline constexpr double kClipEpsilon = 1e-6;

// Whether `checks` (train.step_checks) puts the checks on the device: `auto` where they apply and
// the step runs on a GPU. ConfigError (exit 2) for `device` where they cannot apply, naming why
// (`spike_guard`: train.spike_factor > 0, judged on the host).
bool step_checks_on_device(StepChecks checks, bool spike_guard, bool fp16, bool sharded,
                           const FusedAdamW* optimizer, const c10::Device& device);

class DeviceStepChecks {
 public:
  // `clip`: optim.clip (0: none).
  DeviceStepChecks(double clip, int64_t max_bad_steps, Reducer& reducer, FusedAdamW& optimizer);

  // After the synchronised backward of step `step` (0-based), before its optimizer step: decides
  // on the device, reads nothing back.
  void check(int64_t step);
  // The last step's verdict: 1 where it is skipped, else 0 (a float scalar on the device).
  const torch::Tensor& found_inf() const { return found_inf_; }
  // `loss` where the last step counts, 0 where it is skipped (on the device).
  torch::Tensor counted_loss(const torch::Tensor& loss) const;
  // One read (and the optimizer's step counts): the steps skipped since the last settle, which it
  // warns of naming the steps up to `done`; NumericalError if train.max_bad_steps skipped steps
  // ran in a row. 0 without reading when no step ran since the last settle.
  int64_t settle(int64_t done);
  // The global norm of the last settled step's averaged gradients, before clipping.
  double unclipped_norm() const { return settled_norm_; }

 private:
  double clip_;
  int64_t max_bad_steps_;
  Reducer& reducer_;
  FusedAdamW& optimizer_;
  torch::Tensor norm_;            // the last step's, float32
  torch::Tensor found_inf_;       // the last step's, float32
  torch::Tensor skipped_;         // since the last settle
  torch::Tensor bad_run_;         // skipped steps in a row up to the last step
  torch::Tensor worst_run_;       // the longest run since the last settle
  int64_t first_unsettled_ = -1;  // the first step (1-based) not yet settled; -1: none
  double settled_norm_ = 0;
};

}  // namespace ddpt
