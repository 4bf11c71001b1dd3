// Checked HDF5 calls: a negative return becomes an H5Error carrying the call, file:line, rank,
// host and every message on HDF5's error stack (innermost first).
#pragma once

#include <hdf5.h>

#include <string>

#include "h5/h5_lock.hpp"
#include "util/error.hpp"

namespace ddpt {

// A file that cannot be read or written as expected: exit code 3 (bad data or checkpoint file).
class H5Error : public Error {
 public:
  H5Error(const std::string& call, const std::string& stack, const char* file, int line,
          int system_error = 0);
  // HDF5's own messages, innermost first ("data error detected by Fletcher32 checksum; ...").
  const std::string& stack() const { return stack_; }
  // errno as the failed call returned: the cause of a failed write (ENOSPC, EDQUOT, EIO), which
  // HDF5's messages do not name (ROMIO reports any failed write as MPI_ERR_IO). Taken before
  // anything else runs, since any library call may set errno.
  int system_error() const { return system_error_; }

 private:
  std::string stack_;
  int system_error_ = 0;
};

// What a failed H5Dread of `dataset` says: HDF5's `stack`, where the dataset's only filter is
// Fletcher32 and a filter failed, as a checksum error. (HDF5 1.10 puts "data error detected by
// Fletcher32 checksum" on the stack; 1.14 only "filter returned failure during read".)
std::string describe_failed_read(hid_t dataset, const std::string& stack);

// HDF5's messages on its error stack, innermost first, joined on one line; clears the stack. For
// a failure reported as another error than H5Error.
std::string take_h5_error_stack();

namespace detail {
// Stops HDF5 from printing its own error stack to stderr (we report it in H5Error instead).
void silence_hdf5_error_printing();
[[noreturn]] void throw_h5_error(const char* call, const char* file, int line);
}  // namespace detail

}  // namespace ddpt

// Evaluates `call` once; returns its value (an hid_t or herr_t) when it is not negative. Checks
// the one-thread-at-a-time rule of h5/h5_lock.hpp first, then holds the HDF5 lock for the call.
#define DDPT_CHECK_H5(call)                                                             \
  ([&]() {                                                                              \
    ::ddpt::expect_hdf5_lock(#call);                                                    \
    const ::ddpt::Hdf5Lock ddpt_h5_lock_;                                               \
    const auto ddpt_h5_result_ = (call);                                                \
    if (ddpt_h5_result_ < 0) ::ddpt::detail::throw_h5_error(#call, __FILE__, __LINE__); \
    return ddpt_h5_result_;                                                             \
  }())
