#include "step/gradient_gate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "util/error.hpp"
#include "util/host_read.hpp"
#include "util/log.hpp"

namespace ddpt {

GradientGate::GradientGate(const GateOptions& options, bool fp16, Communicator& comm,
                           Reducer& reducer, FusedAdamW* optimizer)
    : options_(options), comm_(comm), reducer_(reducer), spike_(options.spike) {
  if (fp16) {
    scaler_ = std::make_unique<LossScaler>(options.loss_scale, options.scale_growth_interval,
                                           options.scale_backoff);
  }
  if (step_checks_on_device(options.step_checks, options.spike.factor > 0, fp16, reducer.sharded(),
                            optimizer, comm.device())) {
    on_device_ = std::make_unique<DeviceStepChecks>(options.clip, options.max_bad_steps, reducer,
                                                    *optimizer);
  }
}

void GradientGate::register_state(CheckpointRegistry& registry) {
  if (scaler_) registry.add(*scaler_);
  if (spike_.enabled()) registry.add(spike_);
}

bool GradientGate::gradients_finite(std::optional<double>& norm) const {
  // When clipping needs the norm anyway (and no loss scale comes off first), the norm, summed in
  // double (float values cannot overflow it), answers both questions with one read-back.
  if (options_.clip > 0 && !scaler_) {
    norm = reducer_.gradient_norm();
    return std::isfinite(*norm);
  }
  return reducer_.gradients_finite();
}

void GradientGate::skip_step(int64_t step, const char* why, int64_t& skipped_total) {
  ++skipped_total;
  if (++bad_in_a_row_ >= options_.max_bad_steps) {
    throw NumericalError(fmt::format(
        "{} in {} steps in a row (up to step {}; train.max_bad_steps): training diverged; lower "
        "optim.lr, set optim.clip, or check the data",
        why, bad_in_a_row_, step + 1));
  }
  spdlog::warn("step {}: {}; every rank skips this step", step + 1, why);
}

bool GradientGate::loss_spiked(int64_t step, const torch::Tensor& step_loss,
                               int64_t& skipped_total) {
  // One scalar all-reduce: every rank judges the same global loss.
  torch::Tensor global = step_loss.to(torch::kDouble).reshape({1});
  comm_.all_reduce(global, ReduceOp::kAvg);
  const double loss = read_double(global);
  if (!spike_.is_spike(loss)) return false;
  skip_step(step,
            fmt::format("loss {:.5g} is a spike (over {} x the running mean); the learning rate "
                        "is now x {:.3g}",
                        loss, options_.spike.factor, spike_.lr_factor())
                .c_str(),
            skipped_total);
  return true;
}

double GradientGate::row_norm() const {
  if (on_device_) return on_device_->unclipped_norm();
  return options_.clip > 0 ? unclipped_norm_ : reducer_.gradient_norm();
}

void GradientGate::clip(const std::optional<double>& norm) {
  // The averaged gradients are identical on every rank, so every rank clips alike without talking.
  unclipped_norm_ = norm ? *norm : reducer_.gradient_norm();
  if (unclipped_norm_ > options_.clip)
    reducer_.scale_gradients(options_.clip / (unclipped_norm_ + kClipEpsilon));
}

bool GradientGate::admit(int64_t step, const torch::Tensor& step_loss, int64_t& skipped_total) {
  if (on_device_) {
    on_device_->check(step);
    return true;
  }
  std::optional<double> norm;
  const bool finite = gradients_finite(norm);
  if (scaler_) {
    const double scale = scaler_->scale();
    scaler_->update(finite);
    if (!finite) {
      skip_step(step, fmt::format("fp16 gradients overflowed at loss scale {}", scale).c_str(),
                skipped_total);
      return false;
    }
    reducer_.scale_gradients(1.0 / scale);
  } else if (!finite) {
    unclipped_norm_ = std::numeric_limits<double>::quiet_NaN();  // no finite norm to report
    skip_step(step, "gradients were NaN or inf on some rank", skipped_total);
    return false;
  }
  if (spike_.enabled() && loss_spiked(step, step_loss, skipped_total)) return false;
  bad_in_a_row_ = 0;
  if (options_.clip > 0) clip(norm);
  return true;
}

}  // namespace ddpt
