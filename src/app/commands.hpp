// The subcommands. Each takes the arguments after its name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

#include "runtime/mpi_env.hpp"

namespace ddpt {

// Dispatches argv[1..] to a subcommand; handles --help and --version.
int run_command(const std::vector<std::string>& args, MpiEnv& mpi);

int train_command(const std::vector<std::string>& args, MpiEnv& mpi);
int info_command(const std::vector<std::string>& args, MpiEnv& mpi);
int inspect_command(const std::vector<std::string>& args, MpiEnv& mpi);
int make_data_command(const std::vector<std::string>& args, MpiEnv& mpi);
int predict_command(const std::vector<std::string>& args, MpiEnv& mpi);
int eval_command(const std::vector<std::string>& args, MpiEnv& mpi);
int generate_command(const std::vector<std::string>& args, MpiEnv& mpi);
int export_command(const std::vector<std::string>& args, MpiEnv& mpi);
int bench_command(const std::vector<std::string>& args, MpiEnv& mpi);
// make-data's own options, for --help.
std::string make_data_help();
// bench's own options, for --help.
std::string bench_help();

}  // namespace ddpt
