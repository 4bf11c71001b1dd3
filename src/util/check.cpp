#include "util/check.hpp"

#include <array>

namespace ddpt::detail {

std::string mpi_error_string(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) {
    return "MPI error " + std::to_string(code);
  }
  return std::string(text.data(), static_cast<size_t>(length));
}

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  throw MpiError("MPI", call, mpi_error_string(code), file, line);
}

}  // namespace ddpt::detail
