#include <iostream>

#include "app/commands.hpp"
#include "comm/flight_analysis.hpp"
#include "io/flight_file.hpp"
#include "io/inspect_file.hpp"
#include "util/error.hpp"

namespace ddpt {

int inspect_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  if (args.size() != 1) throw ConfigError("usage: ddptrain inspect FILE | RUN_DIR/flight");
  if (mpi.world_rank() != 0) return 0;  // one process reads and reports
  if (is_flight_directory(args[0])) {
    int world_size = 0;
    std::vector<RankFlight> flights = read_flight_directory(args[0], world_size);
    std::cout << analyse_flights(std::move(flights), world_size).text << "\n";
    return 0;
  }
  inspect_file(args[0], std::cout);
  return 0;
}

}  // namespace ddpt
