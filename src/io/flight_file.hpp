// A rank's flight records (comm/flight_recorder.hpp) as run.dir/flight/rank_NNNNN.h5, written by
// the rank itself when a hang ends the job, and read back by the reporting rank and by
// `ddptrain inspect run.dir/flight`. Format: share/doc/ddptrain/file-formats.md, "flight".
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "comm/flight_analysis.hpp"

namespace ddpt {

std::filesystem::path flight_file_path(const std::filesystem::path& directory, int rank);
// Written under a staging name and renamed into place (io/staged_file.hpp): a reader sees a whole
// file or none.
void write_flight_file(const std::filesystem::path& directory, const RankFlight& flight);
// Every rank_*.h5 in `directory`, of whichever job, by rank, and those that could not be read
// ("rank_00003.h5 (why)"); DataError when there is none. flights_of_job
// (comm/flight_analysis.hpp) picks one job's.
struct FlightDirectory {
  std::vector<RankFlight> flights;
  std::vector<std::string> unreadable;
};
FlightDirectory read_flight_directory(const std::filesystem::path& directory);
// The analysis of one job's files in `directory`, `job`'s or (none given) the newest file's, of
// `world_size` ranks (0: as the files say), followed by a line for each kind of file left out:
// other jobs', unreadable ones.
std::string analyse_flight_directory(const std::filesystem::path& directory,
                                     const std::optional<std::string>& job = std::nullopt,
                                     int world_size = 0);
// Whether `directory` holds flight files (what `inspect` asks of a directory).
bool is_flight_directory(const std::filesystem::path& directory);

}  // namespace ddpt
