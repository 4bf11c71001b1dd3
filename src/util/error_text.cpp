#include "util/error_text.hpp"

#include <c10/util/Exception.h>

#include "util/error.hpp"

namespace ddpt {

std::string error_text(const std::exception& error, bool with_where) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  std::string text = torch_error ? torch_error->what_without_backtrace() : error.what();
  const auto* typed = dynamic_cast<const Error*>(&error);
  if (with_where && typed && !typed->where().empty()) text += " (at " + typed->where() + ")";
  return text;
}

}  // namespace ddpt
