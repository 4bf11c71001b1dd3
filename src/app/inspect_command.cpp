#include <iostream>

#include "app/commands.hpp"
#include "io/inspect_file.hpp"
#include "util/error.hpp"

namespace ddpt {

int inspect_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  if (args.size() != 1) throw ConfigError("usage: ddptrain inspect FILE");
  if (mpi.world_rank() != 0) return 0;  // one process reads and reports
  inspect_file(args[0], std::cout);
  return 0;
}

}  // namespace ddpt
