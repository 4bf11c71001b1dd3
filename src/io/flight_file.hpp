// A rank's flight records (comm/flight_recorder.hpp) as run.dir/flight/rank_NNNNN.h5, written by
// the rank itself when a hang ends the job, and read back by the reporting rank and by
// `ddptrain inspect run.dir/flight`. Format: share/doc/ddptrain/file-formats.md, "flight".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "comm/flight_analysis.hpp"

namespace ddpt {

std::filesystem::path flight_file_path(const std::filesystem::path& directory, int rank);
// Written under a staging name and renamed into place (io/staged_file.hpp): a reader sees a whole
// file or none.
void write_flight_file(const std::filesystem::path& directory, const RankFlight& flight);
// Every rank_*.h5 in `directory`, of whichever job, by rank (DataError when there is none);
// flights_of_job (comm/flight_analysis.hpp) picks one job's.
std::vector<RankFlight> read_flight_directory(const std::filesystem::path& directory);
// Whether `directory` holds flight files (what `inspect` asks of a directory).
bool is_flight_directory(const std::filesystem::path& directory);

}  // namespace ddpt
