// train.precision: fp32, or mixed precision through torch's autocast (matrix products and
// convolutions in bf16/fp16; reductions, norms and the loss in fp32; weights, gradients and the
// optimizer stay fp32, so the gradient all-reduce is fp32 unless ddp.compress says otherwise).
#pragma once

#include <torch/torch.h>

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

}  // namespace ddpt
