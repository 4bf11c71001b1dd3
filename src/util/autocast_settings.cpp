#include "util/autocast_settings.hpp"

#include <ATen/autocast_mode.h>

#include "util/versions.hpp"

namespace ddpt {

#if DDPTRAIN_TORCH_AUTOCAST_BY_DEVICE_TYPE
bool autocast_enabled(c10::DeviceType type) {
  return at::autocast::is_autocast_enabled(type);
}
c10::ScalarType autocast_dtype(c10::DeviceType type) {
  return at::autocast::get_autocast_dtype(type);
}
void set_autocast(c10::DeviceType type, c10::ScalarType dtype, bool enabled) {
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
}
#else
bool autocast_enabled(c10::DeviceType type) {
  return type == c10::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
c10::ScalarType autocast_dtype(c10::DeviceType type) {
  return type == c10::kCUDA ? at::autocast::get_autocast_gpu_dtype()
                            : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast(c10::DeviceType type, c10::ScalarType dtype, bool enabled) {
  if (type == c10::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
}
#endif

}  // namespace ddpt
