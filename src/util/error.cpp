#include "util/error.hpp"

#include "util/process_identity.hpp"

namespace ddpt {

Error::Error(std::string message, ExitCode code, bool collective, std::string where)
    : std::runtime_error(std::move(message)),
      code_(code),
      collective_(collective),
      where_(std::move(where)) {}

LibraryError::LibraryError(const std::string& library, const std::string& call,
                           const std::string& detail, const char* file, int line)
    : Error(library + " call " + call + " failed: " + detail + " " + process_tag(),
            ExitCode::kInternal, false, std::string(file) + ":" + std::to_string(line)) {}

}  // namespace ddpt
