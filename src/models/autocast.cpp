#include "models/autocast.hpp"

#include <ATen/autocast_mode.h>

#include "util/autocast_settings.hpp"
#include "util/error.hpp"

namespace ddpt {

Precision usable_precision(Precision requested, const torch::Device& device) {
  if (requested == Precision::kFp16 && !device.is_cuda()) {
    throw ConfigError("option 'train.precision' = fp16 needs a CUDA device (this rank runs on " +
                      device.str() + "); use bf16 on CPUs");
  }
  return requested;
}

AutocastScope::AutocastScope(Precision precision, const torch::Device& device)
    : active_(precision != Precision::kFp32), device_type_(device.type()) {
  if (!active_) return;
  at::autocast::increment_nesting();
  set_autocast(device_type_, precision == Precision::kBf16 ? at::kBFloat16 : at::kHalf, true);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  set_autocast(device_type_,
               device_type_ == torch::kCUDA ? at::kHalf : at::kBFloat16,  // torch's defaults
               false);
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
}

AutocastState AutocastState::current(torch::DeviceType type) {
  AutocastState state;
  state.type_ = type;
  state.enabled_ = autocast_enabled(type);
  state.dtype_ = autocast_dtype(type);
  return state;
}

void AutocastState::apply() const {
  set_autocast(type_, dtype_, enabled_);
}

AutocastState::Restored::Restored(const AutocastState& saved)
    : before_(std::make_unique<AutocastState>(current(saved.type_))) {
  at::autocast::increment_nesting();
  saved.apply();
}

AutocastState::Restored::~Restored() {
  before_->apply();
  // As AutocastScope: the casts of the weights cached in the scope go with it. Kept, the next
  // step's forward would take this step's weights from the cache.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
}

}  // namespace ddpt
