// train.precision: fp32, or mixed precision through torch's autocast (matrix products and
// convolutions in bf16/fp16; reductions, norms and the loss in fp32; weights, gradients and the
// optimizer stay fp32, so the gradient all-reduce is fp32 unless ddp.compress says otherwise).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "config/choices.hpp"

namespace ddpt {

// `requested` if `device` can train in it; ConfigError for fp16 off CUDA (CPUs have no fast fp16
// kernels, and bf16 needs no loss scaling).
Precision usable_precision(Precision requested, const torch::Device& device);

// Autocast on for the scope (forward and loss), off again at its end (before backward, as torch
// recommends), with the cast-weight cache cleared. Does nothing for fp32.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  torch::DeviceType device_type_ = torch::kCPU;
};

// This thread's autocast settings for one device type, as they are now; restore() sets them
// again. Activation checkpointing recomputes a block's forward in backward, after the forward's
// AutocastScope has ended, and must compute it in the same precision.
class AutocastState {
 public:
  static AutocastState current(torch::DeviceType type);
  // RAII: the saved settings for the scope, the ones before it again at its end, with the casts
  // autocast cached in the scope dropped (as AutocastScope drops them).
  class Restored {
   public:
    explicit Restored(const AutocastState& saved);
    ~Restored();
    Restored(const Restored&) = delete;
    Restored& operator=(const Restored&) = delete;

   private:
    std::unique_ptr<AutocastState> before_;
  };

 private:
  void apply() const;
  torch::DeviceType type_ = torch::kCPU;
  bool enabled_ = false;
  at::ScalarType dtype_ = at::kBFloat16;
};

}  // namespace ddpt
