// Between a step's backward and its optimizer step: whether the averaged gradients may update the
// model, and in what form. In order: the finite check; with fp16, the loss scale (divided out, or
// lowered and the step skipped when the gradients overflowed); the loss-spike guard; clipping to
// the global norm optim.clip. Every rank decides alike: a NaN or inf on any rank reaches every
// rank's averaged gradients through the all-reduce, the spike guard judges the loss averaged over
// the ranks, and the clipped gradients are the same everywhere. A skipped step is counted and
// warned of; train.max_bad_steps skipped steps in a row end the run (NumericalError).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "ddp/reducer.hpp"
#include "train/checkpointed.hpp"
#include "train/loss_scaler.hpp"
#include "train/spike_guard.hpp"

namespace ddpt {

class GradientGate {
 public:
  // `train`: the guards' options; `clip`: optim.clip (0: none); `fp16`: the loss is scaled
  // (train.loss_scale and its growth and backoff).
  GradientGate(const TrainConfig& train, double clip, bool fp16, Communicator& comm,
               Reducer& reducer);

  // What the loss is multiplied by before backward (1 without fp16).
  double loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }
  bool loss_scaled() const { return scaler_ != nullptr; }
  // Collective when the spike guard is on (one scalar all-reduce of `step_loss`, this rank's loss
  // of the step). True: the gradients are ready for the optimizer (unscaled, clipped). False: the
  // step of index `step` is skipped on every rank, and counted in `skipped_total`.
  bool admit(int64_t step, const torch::Tensor& step_loss, int64_t& skipped_total);
  // The spike guard's factor on the learning rate so far.
  double lr_factor() const { return spike_.lr_factor(); }
  // The norm of the last step's averaged gradients before clipping, when optim.clip is on.
  double unclipped_norm() const { return unclipped_norm_; }
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

  const TrainConfig& train_;
  double clip_;
  Communicator& comm_;
  Reducer& reducer_;
  std::unique_ptr<LossScaler> scaler_;  // fp16 only
  SpikeGuard spike_;
  double unclipped_norm_ = 0;
  int64_t bad_in_a_row_ = 0;
};

}  // namespace ddpt
