#include "config/command_flags.hpp"

#include <fmt/format.h>

#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace ddpt {

std::string take_flag(std::vector<std::string>& args, const std::string& name) {
  const std::string flag = "--" + name;
  std::string value;
  bool seen = false;
  for (size_t i = 0; i < args.size();) {
    std::string found;
    size_t used = 0;
    if (args[i] == flag) {
      if (i + 1 >= args.size()) throw ConfigError("option '" + flag + "' needs a value");
      found = args[i + 1];
      used = 2;
    } else if (args[i].rfind(flag + "=", 0) == 0) {
      found = args[i].substr(flag.size() + 1);
      used = 1;
    }
    if (used == 0) {
      ++i;
      continue;
    }
    if (seen) throw ConfigError("option '" + flag + "' given more than once");
    if (found.empty()) throw ConfigError("option '" + flag + "' needs a value");
    seen = true;
    value = found;
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i + used));
  }
  return value;
}

std::string take_required_flag(std::vector<std::string>& args, const std::string& name,
                               const std::string& usage) {
  std::string value = take_flag(args, name);
  if (value.empty()) throw ConfigError("option '--" + name + "' is required: usage: " + usage);
  return value;
}

int64_t take_size_flag(std::vector<std::string>& args, const std::string& name, int64_t fallback) {
  const std::string text = take_flag(args, name);
  if (text.empty()) return fallback;
  const std::optional<int64_t> bytes = parse_byte_size(text);
  if (!bytes || *bytes <= 0) {
    throw ConfigError(
        fmt::format("--{} = '{}' is not a size (a whole number of bytes, optionally "
                    "with K, KiB, M, MiB, G or GiB)",
                    name, text));
  }
  return *bytes;
}

}  // namespace ddpt
