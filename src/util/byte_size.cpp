#include "util/byte_size.hpp"

#include <fmt/format.h>

namespace ddpt {

std::string human_bytes(int64_t bytes) {
  const char* prefixes[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int k = 0;
  while (value >= 1024 && k < 4) {
    value /= 1024;
    ++k;
  }
  return k == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.3g} {}", value, prefixes[k]);
}

}  // namespace ddpt
