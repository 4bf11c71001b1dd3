// Typed errors. Code throws inside; main() decides what to print and how to exit.
#pragma once

#include <stdexcept>
#include <string>

namespace ddpt {

// Process exit codes: a contract with users and with the slurm scripts (DESIGN.md).
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,   // a bug or an unexpected library failure
  kUsage = 2,      // bad command line or deck; nothing was written
  kData = 3,       // bad data or checkpoint file
  kNumerical = 4,  // loss/gradients non-finite beyond the guard's patience
  kTimeout = 5,    // a collective timed out
  // Stopped by SIGUSR1 or SIGTERM after writing a checkpoint: not a failure. 75 is sysexits.h's
  // EX_TEMPFAIL ("try again later"); the slurm scripts requeue on it, and train.resume = auto
  // continues.
  kStopped = 75,
};

// Base of every ddptrain error. `collective` means every rank raises the same error at the same
// point (a bad deck parsed identically everywhere): rank 0 reports it and all ranks exit cleanly.
// Otherwise only this rank knows, and the job must be aborted so peers do not hang.
class Error : public std::runtime_error {
 public:
  Error(std::string message, ExitCode code, bool collective, std::string where = {});
  ExitCode code() const noexcept { return code_; }
  bool collective() const noexcept { return collective_; }
  const std::string& where() const noexcept { return where_; }  // file:line, may be empty

 private:
  ExitCode code_;
  bool collective_;
  std::string where_;
};

// Bad command line, deck or option value. Raised identically on every rank.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message, ExitCode::kUsage, true) {}
};

// A data, model or checkpoint file that cannot be used.
class DataError : public Error {
 public:
  explicit DataError(const std::string& message, bool collective = true)
      : Error(message, ExitCode::kData, collective) {}
};

// Training diverged (decided collectively, so every rank raises it).
class NumericalError : public Error {
 public:
  explicit NumericalError(const std::string& message)
      : Error(message, ExitCode::kNumerical, true) {}
};

// A failing call into a C library (MPI, NCCL, CUDA, HDF5): this rank only.
class LibraryError : public Error {
 public:
  LibraryError(const std::string& library, const std::string& call, const std::string& detail,
               const char* file, int line);
};

class MpiError : public LibraryError {
 public:
  using LibraryError::LibraryError;
};
class NcclError : public LibraryError {
 public:
  using LibraryError::LibraryError;
};
class CudaError : public LibraryError {
 public:
  using LibraryError::LibraryError;
};

}  // namespace ddpt
