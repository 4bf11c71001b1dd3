#include "h5/h5_check.hpp"

#include <cerrno>
#include <mutex>

#include "h5/h5_id.hpp"
#include "util/process_identity.hpp"

namespace ddpt {

H5Error::H5Error(const std::string& call, const std::string& stack, const char* file, int line,
                 int system_error)
    : Error("HDF5 call " + call + " failed: " + stack + " " + process_tag(), ExitCode::kData,
            Raised::kThisRank, std::string(file) + ":" + std::to_string(line)),
      stack_(stack),
      system_error_(system_error) {}

std::string describe_failed_read(hid_t dataset, const std::string& stack) {
  if (stack.find("Fletcher32") != std::string::npos ||
      stack.find("filter returned failure") == std::string::npos) {
    return stack;
  }
  const H5Id properties(H5Dget_create_plist(dataset));
  if (!properties.valid()) return stack;
  unsigned flags = 0;
  size_t values = 0;
  const bool only_fletcher32 = H5Pget_nfilters(properties.get()) == 1 &&
                               H5Pget_filter_by_id2(properties.get(), H5Z_FILTER_FLETCHER32, &flags,
                                                    &values, nullptr, 0, nullptr, nullptr) >= 0;
  H5Eclear2(H5E_DEFAULT);
  return only_fletcher32 ? "data error detected by Fletcher32 checksum (" + stack + ")" : stack;
}

namespace detail {
namespace {

herr_t collect_message(unsigned /*n*/, const H5E_error2_t* error, void* out) {
  auto& text = *static_cast<std::string*>(out);
  if (error->desc && *error->desc) {
    if (!text.empty()) text += "; ";
    // One line: a failed file write's message has line breaks ("file write failed: time = ...\n,
    // filename = ..."), and errors are one line each.
    for (const char* c = error->desc; *c; ++c) {
      if (*c != '\n') text += *c;
    }
  }
  return 0;
}

}  // namespace

void silence_hdf5_error_printing() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

void throw_h5_error(const char* call, const char* file, int line) {
  const int system_error = errno;  // first: walking HDF5's error stack may set it
  throw H5Error(call, take_h5_error_stack(), file, line, system_error);
}

}  // namespace detail

std::string take_h5_error_stack() {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, detail::collect_message, &stack);
  H5Eclear2(H5E_DEFAULT);
  return stack.empty() ? "no message on the HDF5 error stack" : stack;
}
}  // namespace ddpt
