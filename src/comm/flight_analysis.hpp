// What the ranks' flight records (comm/flight_recorder.hpp) say about a hang: the first collective
// where the ranks part, which ranks never reached it, and what each rank was doing there. The
// watchdog prints it when a hang ends the job; `ddptrain inspect run.dir/flight` prints it again
// from the files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/flight_recorder.hpp"

namespace ddpt {

// One rank's flight file.
struct RankFlight {
  int rank = 0;
  std::string host;
  int64_t step = 0;                   // the step in progress when it was written
  double written_s = 0;               // when (seconds since the Unix epoch)
  std::vector<FlightRecord> records;  // oldest first
};

struct FlightAnalysis {
  // The first sequence number where the ranks part: a rank with records stops short of it, the
  // ranks' collectives under it differ, or it did not complete on some rank. 0: none found.
  uint64_t sequence = 0;
  bool different_collectives = false;  // the ranks' records under `sequence` differ
  std::vector<int> never_reached;      // ranks with records that stop before `sequence`
  std::vector<int> without_records;    // ranks of the world with no flight file
  std::string text;                    // for a person: a few lines
};

// `flights`: the ranks that wrote a file, any order; `world_size`: the job's ranks.
FlightAnalysis analyse_flights(std::vector<RankFlight> flights, int world_size);

}  // namespace ddpt
