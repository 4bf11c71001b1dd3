#include "runtime/mpi_env.hpp"

#include <array>

#include "util/check.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"

namespace ddpt {

std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "unknown thread level " + std::to_string(level);
  }
}

MpiEnv::MpiEnv(int* argc, char*** argv) {
  int initialized = 0;
  DDPT_CHECK_MPI(MPI_Initialized(&initialized));
  int thread_level = MPI_THREAD_SINGLE;  // what MPI provides
  if (!initialized) {
    DDPT_CHECK_MPI(MPI_Init_thread(argc, argv, kRequiredThreadLevel, &thread_level));
    owns_mpi_ = true;
  } else {
    DDPT_CHECK_MPI(MPI_Query_thread(&thread_level));
  }
  // Failures come back as return codes, which DDPT_CHECK_MPI turns into typed errors.
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  DDPT_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size_));
  std::array<char, MPI_MAX_PROCESSOR_NAME> name{};
  int length = 0;
  DDPT_CHECK_MPI(MPI_Get_processor_name(name.data(), &length));
  host_.assign(name.data(), static_cast<size_t>(length));
  set_process_identity(world_rank_, host_);
  if (thread_level < kRequiredThreadLevel) {
    throw Error("MPI provides " + thread_level_name(thread_level) + " but ddptrain needs " +
                    thread_level_name(kRequiredThreadLevel) + " (communication thread) " +
                    process_tag(),
                ExitCode::kInternal, Raised::kAllRanks);
  }
}

MpiEnv::~MpiEnv() {
  if (!owns_mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && MPI_Finalize() != MPI_SUCCESS) {
    write_stderr_line(process_tag() + " warning: MPI_Finalize failed");
  }
}

std::string MpiEnv::library_version() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int length = 0;
  DDPT_CHECK_MPI(MPI_Get_library_version(text.data(), &length));
  std::string version(text.data(), static_cast<size_t>(length));
  const auto comma = version.find(',');  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  return comma == std::string::npos ? version : version.substr(0, comma);
}

void MpiEnv::abort(int exit_code) const {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort should not return; make sure of it.
}

}  // namespace ddpt
