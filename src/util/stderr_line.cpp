#include "util/stderr_line.hpp"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace ddpt {

void write_stderr_line(std::string_view text) noexcept {
  std::string line;
  try {
    line.reserve(text.size() + 1);
    line.append(text).push_back('\n');
  } catch (...) {
    return;  // no memory for the copy: nothing else could be said either
  }
  const char* next = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t written = ::write(STDERR_FILENO, next, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // stderr closed or full: nowhere else to report it
    next += written;
    left -= static_cast<size_t>(written);
  }
}

}  // namespace ddpt
