// Between a step's backward and its optimizer step: whether the averaged gradients may update the
// model, and in what form. In order: the finite check; with fp16, the loss scale (divided out, or
// lowered and the step skipped when the gradients overflowed); the loss-spike guard; clipping to
// the global norm optim.clip. Every rank decides alike: a NaN or inf on any rank reaches every
// rank's averaged gradients through the all-reduce, the spike guard judges the loss averaged over
// the ranks, and the clipped gradients are the same everywhere. A skipped step is counted and
// warned of; train.max_bad_steps skipped steps in a row end the run (NumericalError).
//
// That is on the host, which reads the gradient norm back every step. With train.step_checks =
// device (the default on GPUs where it applies) the finite check and clipping are decided on the
// device instead (step/device_step_checks.hpp), and skipped steps are counted, warned of and
// judged against train.max_bad_steps at the metrics rows and checkpoints (settle).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "comm/communicator.hpp"
#include "ddp/reducer.hpp"
#include "optim/fused_adamw.hpp"
#include "state/checkpointed.hpp"
#include "step/device_step_checks.hpp"
#include "step/loss_scaler.hpp"
#include "step/spike_guard.hpp"

namespace ddpt {

// The gradient gate's options: what it checks, where, and what it does about it.
struct GateOptions {
  double clip = 0.0;           // optim.clip: the global L2 norm gradients are clipped to; 0: none
  int64_t max_bad_steps = 10;  // train.max_bad_steps
  StepChecks step_checks = StepChecks::kAuto;  // train.step_checks
  double loss_scale = 65536.0;                 // fp16: train.loss_scale and its growth and backoff
  int64_t scale_growth_interval = 2000;
  double scale_backoff = 0.5;
  SpikeGuardOptions spike;
};

class GradientGate {
 public:
  // `fp16`: the loss is scaled (options.loss_scale and its growth and backoff); `optimizer`: the
  // one that can be gated on the device, or nullptr. ConfigError for step_checks = device where
  // that cannot be.
  GradientGate(const GateOptions& options, bool fp16, Communicator& comm, Reducer& reducer,
               FusedAdamW* optimizer);

  // What the loss is multiplied by before backward (1 without fp16).
  double loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }
  bool loss_scaled() const { return scaler_ != nullptr; }
  // Collective when the spike guard is on (one scalar all-reduce of `step_loss`, this rank's loss
  // of the step). True: the gradients are ready for the optimizer (unscaled, clipped). False: the
  // step of index `step` is skipped on every rank, and counted in `skipped_total`.
  // On the device: always true; the optimizer's next step is gated (found_inf()).
  bool admit(int64_t step, const torch::Tensor& step_loss, int64_t& skipped_total);
  // The checks on the device: the last step's verdict (1: skipped), else undefined.
  torch::Tensor found_inf() const { return on_device_ ? on_device_->found_inf() : torch::Tensor(); }
  // `step_loss` as the metrics count it: 0 for a step skipped on the device.
  torch::Tensor counted_loss(const torch::Tensor& step_loss) const {
    return on_device_ ? on_device_->counted_loss(step_loss) : step_loss;
  }
  // The checks on the device: reads what they counted since the last settle (one read; see
  // DeviceStepChecks::settle) and returns the steps skipped since; 0 on the host.
  int64_t settle(int64_t done) { return on_device_ ? on_device_->settle(done) : 0; }
  // The spike guard's factor on the learning rate so far.
  double lr_factor() const { return spike_.lr_factor(); }
  // The norm of the last step's averaged gradients before clipping, for the metrics row: on the
  // device, of the last settled step; on the host, the one clipping computed, else computed now
  // (a read).
  double row_norm() const;
  // The loss scaler and the spike guard, where they are on, in that order.
  void register_state(CheckpointRegistry& registry);

 private:
  // Whether the averaged gradients are all finite; sets `norm` to their norm when clipping will
  // need it (computed once for both).
  bool gradients_finite(std::optional<double>& norm) const;
  // Whether `step_loss`, averaged over the ranks, is a spike.
  bool loss_spiked(int64_t step, const torch::Tensor& step_loss, int64_t& skipped_total);
  // Every rank alike: counts a skipped step; NumericalError after train.max_bad_steps in a row.
  void skip_step(int64_t step, const char* why, int64_t& skipped_total);
  void clip(const std::optional<double>& norm);

  const GateOptions options_;
  Communicator& comm_;
  Reducer& reducer_;
  std::unique_ptr<LossScaler> scaler_;           // fp16 only
  std::unique_ptr<DeviceStepChecks> on_device_;  // train.step_checks on the device
  SpikeGuard spike_;
  double unclipped_norm_ = 0;
  int64_t bad_in_a_row_ = 0;
};

}  // namespace ddpt
