#include <fmt/format.h>

#include <iostream>

#include "app/commands.hpp"
#include "app/job.hpp"
#include "config/parse_config.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

std::string usage() {
  return "usage: ddptrain COMMAND [ARGS]\n"
         "\n"
         "Trains LibTorch models data-parallel over MPI ranks (one rank per GPU or CPU slot).\n"
         "Launch with mpirun -np N, srun, or as a plain single process.\n"
         "\n"
         "commands:\n"
         "  train DECK [--section.key=value ...]  train as the deck says; overrides win\n"
         "  info [DECK] [--section.key=value ...]  print MPI, ranks, nodes, devices, threads\n"
         "  inspect FILE                          summarise a metrics.h5 or checkpoint file\n"
         "                                        (verifies checkpoint checksums; exit 3 if bad)\n"
         "\n"
         "  -h, --help      this text and every deck option\n"
         "  -V, --version   the version\n"
         "\n"
         "exit codes: 0 done, 2 bad command line or deck, 3 bad data or model file,\n"
         "            4 numerical failure, 5 collective timeout, 1 other errors\n";
}

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

}  // namespace

int run_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const bool rank0 = mpi.world_rank() == 0;
  if (args.empty()) throw ConfigError("no command given\n" + usage());
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "-V" || command == "--version") {
    if (rank0) std::cout << "ddptrain " << ddptrain_version() << "\n";
    return 0;
  }
  if (command == "-h" || command == "--help" || wants_help(rest)) {
    if (rank0) std::cout << usage() << "\n" << options_help();
    return 0;
  }
  if (command == "train") return train_command(rest, mpi);
  if (command == "info") return info_command(rest, mpi);
  if (command == "inspect") return inspect_command(rest, mpi);
  throw ConfigError("unknown command '" + command +
                    "' (commands: train, info, inspect; see --help)");
}

}  // namespace ddpt
