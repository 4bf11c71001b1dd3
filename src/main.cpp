// ddptrain: parse, pick the subcommand, run it; the one top-level try decides the exit code.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "comm/report_error.hpp"
#include "h5/h5_file.hpp"
#include "runtime/process_tuning.hpp"
#include "util/log.hpp"
#include "util/stop_signal.hpp"

namespace {

// Whether the command line has --prompt (generate's quick look at one prompt).
bool names_a_prompt(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--prompt" || arg.rfind("--prompt=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<ddpt::MpiEnv> mpi;  // outlives the catch: the error path may need MPI_Abort
  ddpt::tune_process();               // before MPI_Init reads its parameters
  // train and generate: SIGUSR1/SIGTERM mean "keep what is done and stop" (a checkpoint, the
  // rows generated), from the first instant (SLURM may signal while MPI starts). The other
  // subcommands, and generate --prompt (one row, nothing kept), keep the default actions.
  if (argc > 1 && (std::string(argv[1]) == "train" ||
                   (std::string(argv[1]) == "generate" && !names_a_prompt(argc, argv)))) {
    ddpt::install_stop_signal_handlers();
  }
  try {
    mpi = std::make_unique<ddpt::MpiEnv>(&argc, &argv);
    ddpt::init_logging(mpi->world_rank(), mpi->host());
    return ddpt::run_command(std::vector<std::string>(argv + 1, argv + argc), *mpi);
  } catch (const std::exception& error) {
    const int code = ddpt::report_error(error, mpi.get());
    if (ddpt::hdf5_files_abandoned()) {
      // MPI_Finalize runs HDF5's clean-up, which crashed on the file left open: exit without it.
      std::fflush(nullptr);
      std::_Exit(code);
    }
    return code;
  }
}
