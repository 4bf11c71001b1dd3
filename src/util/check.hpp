// Checked calls into C libraries: call once, test the status, throw a typed error carrying
// the call text, file:line, rank, host and the library's own error string.
#pragma once

#include <mpi.h>

#include <string>

#include "util/error.hpp"

namespace ddpt::detail {
std::string mpi_error_string(int code);
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
}  // namespace ddpt::detail

#define DDPT_CHECK_MPI(call)                                                        \
  do {                                                                              \
    const int ddpt_mpi_status_ = (call);                                            \
    if (ddpt_mpi_status_ != MPI_SUCCESS)                                            \
      ::ddpt::detail::throw_mpi_error(ddpt_mpi_status_, #call, __FILE__, __LINE__); \
  } while (0)
