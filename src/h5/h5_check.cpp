#include "h5/h5_check.hpp"

#include <mutex>

#include "util/process_identity.hpp"

namespace ddpt {

H5Error::H5Error(const std::string& call, const std::string& stack, const char* file, int line)
    : Error("HDF5 call " + call + " failed: " + stack + " " + process_tag(), ExitCode::kData,
            Raised::kThisRank, std::string(file) + ":" + std::to_string(line)),
      stack_(stack) {}

namespace detail {
namespace {

herr_t collect_message(unsigned /*n*/, const H5E_error2_t* error, void* out) {
  auto& text = *static_cast<std::string*>(out);
  if (error->desc && *error->desc) {
    if (!text.empty()) text += "; ";
    text += error->desc;
  }
  return 0;
}

}  // namespace

void silence_hdf5_error_printing() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

void throw_h5_error(const char* call, const char* file, int line) {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_message, &stack);
  H5Eclear2(H5E_DEFAULT);
  throw H5Error(call, stack.empty() ? "no message on the HDF5 error stack" : stack, file, line);
}

}  // namespace detail
}  // namespace ddpt
