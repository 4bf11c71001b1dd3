#include "comm/report_error.hpp"

#include "comm/make_communicator.hpp"
#include "util/error.hpp"
#include "util/error_text.hpp"
#include "util/stderr_line.hpp"

namespace ddpt {

int report_error(const std::exception& error, MpiEnv* mpi) {
  const auto* typed = dynamic_cast<const Error*>(&error);
  const int code = exit_code_of(error);
  const bool collective = typed && typed->collective();
  const int rank = mpi ? mpi->world_rank() : 0;
  if (collective) {
    // Every rank raised the same error: one report, then every rank exits normally.
    if (rank == 0) {
      write_stderr_line("ddptrain: error: " + error_text(error, /*with_where=*/false));
    }
    return code;
  }
  print_rank_error(error);
  // Only this rank knows: peers may be inside a collective with it. Abort the device
  // communicators (so NCCL peers fail instead of hanging), then the whole MPI job.
  abort_device_communicators();
  if (mpi && mpi->world_size() > 1) mpi->abort(code);
  return code;
}

}  // namespace ddpt
