// Options whose value is a list of integers (model.hidden = 256,128).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpt {

// Parses "256,128" style lists of integers of at least `minimum` (an empty text: none); throws
// ConfigError naming `option`.
std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text,
                                    int64_t minimum = 1);

}  // namespace ddpt
