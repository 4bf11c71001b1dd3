#include "util/error_text.hpp"

#include <c10/util/Exception.h>

#include "util/error.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"

namespace ddpt {

std::string error_text(const std::exception& error, bool with_where) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  std::string text = torch_error ? torch_error->what_without_backtrace() : error.what();
  const auto* typed = dynamic_cast<const Error*>(&error);
  if (with_where && typed && !typed->where().empty()) text += " (at " + typed->where() + ")";
  return text;
}

int exit_code_of(const std::exception& error) {
  const auto* typed = dynamic_cast<const Error*>(&error);
  if (typed) return static_cast<int>(typed->code());
  // LibTorch's CUDA allocator throws this wherever an allocation fails (the trainer's steps
  // rethrow it as OutOfMemoryError, naming the batch size).
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error)) {
    return static_cast<int>(ExitCode::kOutOfMemory);
  }
  return static_cast<int>(ExitCode::kInternal);
}

void print_rank_error(const std::exception& error) {
  write_stderr_line(process_tag() + " ddptrain: error: " + error_text(error));
}

}  // namespace ddpt
