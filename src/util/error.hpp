// Typed errors. Code throws inside; main() decides what to print and how to exit.
#pragma once

#include <stdexcept>
#include <string>

namespace ddpt {

// Process exit codes: a contract with users (README, "Exit codes") and with the slurm scripts,
// which requeue on kStopped.
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,     // a bug or an unexpected library failure
  kUsage = 2,        // bad command line or deck; nothing was written
  kData = 3,         // bad data or checkpoint file
  kNumerical = 4,    // loss/gradients non-finite beyond the guard's patience
  kTimeout = 5,      // a collective timed out, or its communicator failed (NCCL async error)
  kOutOfMemory = 6,  // the GPU's memory did not hold a step (train.batch_size too large for it)
  // Stopped by SIGUSR1 or SIGTERM after writing a checkpoint: not a failure. 75 is sysexits.h's
  // EX_TEMPFAIL ("try again later"); the slurm scripts requeue on it, and train.resume = auto
  // continues.
  kStopped = 75,
};

// Which ranks raise an error, decided where it is raised (LAMMPS's Error::all and Error::one).
//  kAllRanks: every rank raises the same error at the same point, because it follows from what
//             every rank holds alike (the deck, a file's layout that every rank reads): rank 0
//             reports it and all ranks exit cleanly.
//  kThisRank: only this rank knows (a failed read or checksum, a rank-0-only file, a library
//             call): the job must be aborted so that peers inside a collective do not hang.
// When unsure, kThisRank: aborting a job that would have ended anyway costs a line of output;
// treating a one-rank error as collective leaves every other rank waiting.
enum class Raised { kAllRanks, kThisRank };

// Base of every ddptrain error.
class Error : public std::runtime_error {
 public:
  Error(std::string message, ExitCode code, Raised raised, std::string where = {});
  ExitCode code() const noexcept { return code_; }
  bool collective() const noexcept { return raised_ == Raised::kAllRanks; }
  Raised raised() const noexcept { return raised_; }
  const std::string& where() const noexcept { return where_; }  // file:line, may be empty

  // The same error with "<context>: " in front of its message; code, ranks and location kept, so
  // a caller that adds the file name cannot turn a one-rank error into a collective one.
  Error in_context(const std::string& context) const;
  // The same error known to one rank only: for code that runs on one rank (rank 0's metrics).
  Error on_this_rank() const;

 private:
  ExitCode code_;
  Raised raised_;
  std::string where_;
};

// Bad command line, deck or option value. Raised identically on every rank.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message)
      : Error(message, ExitCode::kUsage, Raised::kAllRanks) {}
};

// A data, model or checkpoint file that cannot be used. Every raise says which ranks raise it.
class DataError : public Error {
 public:
  DataError(const std::string& message, Raised raised) : Error(message, ExitCode::kData, raised) {}
};

// Training diverged (decided collectively, so every rank raises it).
class NumericalError : public Error {
 public:
  explicit NumericalError(const std::string& message)
      : Error(message, ExitCode::kNumerical, Raised::kAllRanks) {}
};

// A failing call into a C library (MPI, NCCL, CUDA, HDF5): this rank only.
class LibraryError : public Error {
 public:
  LibraryError(const std::string& library, const std::string& call, const std::string& detail,
               const char* file, int line);
};

// A GPU ran out of memory. Usually this rank only: another rank's GPU may have had room
// (train.batch_size = auto decides on every rank alike).
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& message, Raised raised = Raised::kThisRank)
      : Error(message, ExitCode::kOutOfMemory, raised) {}
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
