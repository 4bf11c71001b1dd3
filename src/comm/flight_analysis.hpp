// What the ranks' flight records (comm/flight_recorder.hpp) say about a hang: in each stream of
// collectives, the first one where the ranks part, which ranks never reached it, and what each
// rank was doing there. The watchdog prints it when a hang ends the job; `ddptrain inspect
// run.dir/flight` prints it again from the files. Only one job's files are analysed together
// (flights_of_job): a restart in the same run.dir, or a job of another size, leaves files the
// next job may not overwrite.
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
  std::string job;                    // which job wrote it: its ranks agree on it at start-up
  int world_size = 0;                 // that job's ranks
  int64_t step = 0;                   // the step in progress when it was written
  double written_s = 0;               // when (seconds since the Unix epoch)
  std::vector<FlightRecord> records;  // oldest first, every stream
};

// Where one stream's ranks part: a rank with records stops short of `sequence`, or it did not
// complete on some rank (collectives every rank completed never are the parting point).
struct FlightParting {
  std::string stream;
  uint64_t sequence = 0;
  bool different_collectives = false;  // the ranks' records under `sequence` differ
  std::vector<int> never_reached;      // ranks with records that stop before `sequence`
};

struct FlightAnalysis {
  std::vector<FlightParting> partings;  // the streams that part, the one that parted first first
  std::vector<int> without_records;     // ranks of the world with no flight file
  std::string text;                     // for a person: a few lines
};

// `flights`: the ranks of one job that wrote a file, any order; `world_size`: the job's ranks.
FlightAnalysis analyse_flights(std::vector<RankFlight> flights, int world_size);

// The files of one job, and what was left out.
struct JobFlights {
  std::string job;
  int world_size = 0;
  std::vector<RankFlight> flights;
  std::string left_out;  // a line naming the files of other jobs; empty when there were none
};

// The files of `job` among `flights`, or with no `job`, those of the job that wrote the newest.
JobFlights flights_of_job(std::vector<RankFlight> flights,
                          const std::optional<std::string>& job = std::nullopt);

}  // namespace ddpt
