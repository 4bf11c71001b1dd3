// Byte counts for people: "1.26 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace ddpt {

// Three significant digits and a binary prefix ("512 B", "3.2 KiB", "1.26 GiB").
std::string human_bytes(int64_t bytes);

}  // namespace ddpt
