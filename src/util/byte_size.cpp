#include "util/byte_size.hpp"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <utility>

namespace ddpt {

std::string human_bytes(int64_t bytes) {
  const char* prefixes[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int k = 0;
  while (value >= 1024 && k < 4) {
    value /= 1024;
    ++k;
  }
  if (k == 0) return fmt::format("{} B", bytes);
  // Three significant digits; from 100 up whole units, so 1010 KiB does not read "1.01e+03 KiB".
  return value >= 100 ? fmt::format("{:.0f} {}", value, prefixes[k])
                      : fmt::format("{:.3g} {}", value, prefixes[k]);
}

std::optional<int64_t> parse_byte_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 18) return std::nullopt;  // 18 digits always fit in int64_t
  const int64_t number = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  const std::pair<const char*, int> units[] = {{"", 0},   {"B", 0},    {"K", 10}, {"KiB", 10},
                                               {"M", 20}, {"MiB", 20}, {"G", 30}, {"GiB", 30}};
  for (const auto& [name, shift] : units) {
    if (unit != name) continue;
    if (number > (std::numeric_limits<int64_t>::max() >> shift)) return std::nullopt;
    return number << shift;
  }
  return std::nullopt;
}

}  // namespace ddpt
