#include <iostream>

#include "app/commands.hpp"
#include "io/flight_file.hpp"
#include "io/inspect_file.hpp"
#include "util/error.hpp"

namespace ddpt {

int inspect_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  if (args.size() != 1) throw ConfigError("usage: ddptrain inspect FILE | RUN_DIR/flight");
  if (mpi.world_rank() != 0) return 0;  // one process reads and reports
  if (is_flight_directory(args[0])) {
    // The newest job's files: a restart in the same run.dir leaves the earlier job's ranks' files
    // that it did not overwrite.
    std::cout << analyse_flight_directory(args[0]) << "\n";
    return 0;
  }
  inspect_file(args[0], std::cout);
  return 0;
}

}  // namespace ddpt
