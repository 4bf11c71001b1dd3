#include <c10/util/Exception.h>

#include <cstdio>

#include "app/commands.hpp"
#include "comm/make_communicator.hpp"
#include "util/error.hpp"
#include "util/process_identity.hpp"

namespace ddpt {

namespace {

// LibTorch's errors carry a C++ stack trace of dozens of lines in what(): the line without it.
const char* message_of(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    return torch_error->what_without_backtrace();
  }
  return error.what();
}

}  // namespace

int report_error(const std::exception& error, MpiEnv* mpi) {
  const auto* typed = dynamic_cast<const Error*>(&error);
  const int code = static_cast<int>(typed ? typed->code() : ExitCode::kInternal);
  const bool collective = typed && typed->collective();
  const int rank = mpi ? mpi->world_rank() : 0;
  if (collective) {
    // Every rank raised the same error: one report, then every rank exits normally.
    if (rank == 0) std::fprintf(stderr, "ddptrain: error: %s\n", message_of(error));
    return code;
  }
  const std::string where = typed && !typed->where().empty() ? " (at " + typed->where() + ")" : "";
  std::fprintf(stderr, "%s ddptrain: error: %s%s\n", process_tag().c_str(), message_of(error),
               where.c_str());
  std::fflush(stderr);
  // Only this rank knows: peers may be inside a collective with it. Abort the device
  // communicators (so NCCL peers fail instead of hanging), then the whole MPI job.
  abort_device_communicators();
  if (mpi && mpi->world_size() > 1) mpi->abort(code);
  return code;
}

}  // namespace ddpt
