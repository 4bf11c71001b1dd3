// This thread's autocast settings for one device type, through the API of the LibTorch ddptrain is
// built against (util/versions.hpp: the per-device-type calls of 2.4 replaced 1.13's per-device
// ones). The layers that switch autocast (models/autocast.hpp) and those that act on what it does
// (ZeRO-3's casts, ddp/unit_casts.hpp; the CPU linear layer, models/linear.hpp) read it here.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace ddpt {

bool autocast_enabled(c10::DeviceType type);
// The type autocast casts matrix products to on `type` (bf16 or fp16), on or not.
c10::ScalarType autocast_dtype(c10::DeviceType type);
void set_autocast(c10::DeviceType type, c10::ScalarType dtype, bool enabled);

}  // namespace ddpt
