#include "step/device_step_checks.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/host_read.hpp"
#include "util/log.hpp"

namespace ddpt {

bool step_checks_on_device(StepChecks checks, bool spike_guard, bool fp16, bool sharded,
                           const FusedAdamW* optimizer, const c10::Device& device) {
  if (checks == StepChecks::kHost) return false;
  std::string why_not;
  if (fp16) {
    why_not =
        "train.precision = fp16, whose loss scale the host adjusts from each step's gradients";
  } else if (spike_guard) {
    why_not = "the spike guard (train.spike_factor > 0), which judges each step's loss on the host";
  } else if (sharded) {
    why_not = "ddp.zero >= 1 on more than one rank";
  } else if (optimizer == nullptr) {
    why_not = "optim.type = sgd (only AdamW's fused update can be skipped on the device)";
  }
  if (checks == StepChecks::kAuto) return why_not.empty() && device.is_cuda();
  if (!why_not.empty()) {
    throw ConfigError("train.step_checks = device cannot be used with " + why_not +
                      "; use train.step_checks = auto or host");
  }
  return true;
}

DeviceStepChecks::DeviceStepChecks(double clip, int64_t max_bad_steps, Reducer& reducer,
                                   FusedAdamW& optimizer)
    : clip_(clip), max_bad_steps_(max_bad_steps), reducer_(reducer), optimizer_(optimizer) {}

void DeviceStepChecks::check(int64_t step) {
  torch::NoGradGuard no_grad;
  if (first_unsettled_ < 0) first_unsettled_ = step + 1;
  norm_ = reducer_.gradient_norm_on_device();
  found_inf_ = torch::isfinite(norm_).logical_not().to(torch::kFloat);
  if (!skipped_.defined()) {
    skipped_ = torch::zeros_like(norm_);
    bad_run_ = torch::zeros_like(norm_);
    worst_run_ = torch::zeros_like(norm_);
  }
  skipped_.add_(found_inf_);
  bad_run_.add_(1).mul_(found_inf_);
  worst_run_ = torch::maximum(worst_run_, bad_run_);
  // As host clipping: gradients over optim.clip are scaled to it, by clip / (norm + eps); as a
  // divisor for the kernel, at least 1. A non-finite norm gives a NaN divisor for a skipped step.
  torch::Tensor divisor;
  if (clip_ > 0) divisor = ((norm_ + kClipEpsilon) / clip_).clamp_min(1.0);
  optimizer_.gate_next_step(found_inf_, divisor);
}

torch::Tensor DeviceStepChecks::counted_loss(const torch::Tensor& loss) const {
  return loss.masked_fill(found_inf_ != 0, 0);
}

int64_t DeviceStepChecks::settle(int64_t done) {
  if (first_unsettled_ < 0) return 0;
  const int64_t first = first_unsettled_;
  first_unsettled_ = -1;
  const torch::Tensor host =
      read_to_host(torch::stack({skipped_, worst_run_, norm_}).to(torch::kDouble));
  const double* values = host.data_ptr<double>();
  const auto skipped = static_cast<int64_t>(values[0]);
  const auto worst_run = static_cast<int64_t>(values[1]);
  settled_norm_ = values[2];
  skipped_.zero_();
  worst_run_.copy_(bad_run_);
  optimizer_.settle_step_counts();
  if (worst_run >= max_bad_steps_) {
    throw NumericalError(fmt::format(
        "gradients were NaN or inf on some rank in {} steps in a row (up to step {}; "
        "train.max_bad_steps): training diverged; lower optim.lr, set optim.clip, or check the "
        "data",
        worst_run, done));
  }
  if (skipped > 0) {
    spdlog::warn(
        "steps {}-{}: {} skipped, their gradients NaN or inf on some rank (every rank "
        "skipped them)",
        first, done, skipped);
  }
  return skipped;
}

}  // namespace ddpt
