// Flags a subcommand takes besides the deck and its --section.key=value overrides
// (`ddptrain predict DECK --checkpoint PATH ...`).
#pragma once

#include <string>
#include <vector>

namespace ddpt {

// Removes `--name VALUE` or `--name=VALUE` from `args` and returns VALUE; "" if absent.
// ConfigError if the flag is given twice or has no value.
std::string take_flag(std::vector<std::string>& args, const std::string& name);
// take_flag, but ConfigError naming `usage` if the flag is absent.
std::string take_required_flag(std::vector<std::string>& args, const std::string& name,
                               const std::string& usage);

}  // namespace ddpt
