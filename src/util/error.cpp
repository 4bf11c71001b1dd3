#include "util/error.hpp"

#include "util/process_identity.hpp"

namespace ddpt {

Error::Error(std::string message, ExitCode code, Raised raised, std::string where)
    : std::runtime_error(std::move(message)),
      code_(code),
      raised_(raised),
      where_(std::move(where)) {}

Error Error::in_context(const std::string& context) const {
  return Error(context + ": " + what(), code_, raised_, where_);
}

Error Error::on_this_rank() const {
  return Error(what(), code_, Raised::kThisRank, where_);
}

LibraryError::LibraryError(const std::string& library, const std::string& call,
                           const std::string& detail, const char* file, int line)
    : Error(library + " call " + call + " failed: " + detail + " " + process_tag(),
            ExitCode::kInternal, Raised::kThisRank,
            std::string(file) + ":" + std::to_string(line)) {}

}  // namespace ddpt
