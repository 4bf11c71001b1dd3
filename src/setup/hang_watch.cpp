#include "setup/hang_watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "h5/h5_lock.hpp"
#include "io/flight_file.hpp"

namespace ddpt {
namespace {

// How long the watchdog's thread waits for HDF5: another thread may hold it inside a collective
// write that waits for the hung rank, and the asker collects answers for only a few seconds.
constexpr double kHdf5WaitS = 1.0;

}  // namespace

void watch_for_hangs(Watchdog& watchdog, const Config& config, int world_size) {
  watchdog.set_hang_rule(config.dist.hang_factor, config.dist.hang_floor_s);
  watchdog.record_flights(config.dist.flight_records);
  if (config.dist.flight_records <= 0) return;
  const std::filesystem::path directory = std::filesystem::path(config.run.dir) / "flight";
  // Files older than this job are an earlier attempt's (a restart in the same run.dir).
  const double job_started_s = FlightRecorder::now_s();
  auto write = [directory, world_size](const RankFlight& flight) {
    const Hdf5TryLock lock(kHdf5WaitS);
    if (!lock.owns()) throw std::runtime_error("HDF5 stayed busy in another thread");
    write_flight_file(directory, flight, world_size);
  };
  auto explain = [directory, job_started_s]() {
    const Hdf5TryLock lock(kHdf5WaitS);
    if (!lock.owns()) throw std::runtime_error("HDF5 stayed busy in another thread");
    int files_world = 0;
    std::vector<RankFlight> flights = read_flight_directory(directory, files_world);
    flights.erase(std::remove_if(
                      flights.begin(), flights.end(),
                      [job_started_s](const RankFlight& f) { return f.written_s < job_started_s; }),
                  flights.end());
    return analyse_flights(std::move(flights), files_world).text +
           fmt::format("\nflight records: {} (ddptrain inspect {})", directory.string(),
                       directory.string());
  };
  watchdog.set_flight_output(std::move(write), std::move(explain));
}

}  // namespace ddpt
