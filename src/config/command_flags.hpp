// Flags a subcommand takes besides the deck and its --section.key=value overrides
// (`ddptrain predict DECK --checkpoint PATH ...`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpt {

// Removes `--name VALUE` or `--name=VALUE` from `args` and returns VALUE; "" if absent.
// ConfigError if the flag is given twice or has no value.
std::string take_flag(std::vector<std::string>& args, const std::string& name);
// take_flag, but ConfigError naming `usage` if the flag is absent.
std::string take_required_flag(std::vector<std::string>& args, const std::string& name,
                               const std::string& usage);
// take_flag for a size in bytes (util/byte_size.hpp: "8", "64KiB", "256M", "5GiB"), `fallback`
// if absent; ConfigError naming the flag for anything else or a size of 0.
int64_t take_size_flag(std::vector<std::string>& args, const std::string& name, int64_t fallback);

}  // namespace ddpt
