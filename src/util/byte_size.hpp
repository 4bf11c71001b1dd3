// Byte counts for people: "1.26 GiB".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddpt {

// Three significant digits and a binary prefix ("512 B", "3.2 KiB", "1.26 GiB").
std::string human_bytes(int64_t bytes);
// A size as people type it: a whole number with an optional binary unit, as nccl-tests takes
// them ("8", "8B", "64K", "64KiB", "256M", "256MiB", "1G", "1GiB"). nullopt for anything else,
// a negative number or a size beyond int64_t.
std::optional<int64_t> parse_byte_size(const std::string& text);

}  // namespace ddpt
