#include "setup/hang_watch.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "h5/h5_lock.hpp"
#include "io/flight_file.hpp"
#include "util/process_identity.hpp"

namespace ddpt {
namespace {

// How long the watchdog's thread waits for HDF5: another thread may hold it inside a collective
// write that waits for the hung rank, and the asker collects answers for only a few seconds.
constexpr double kHdf5WaitS = 1.0;

}  // namespace

void watch_for_hangs(Watchdog& watchdog, HostGroup& group, const Config& config) {
  watchdog.set_hang_rule(config.dist.hang_factor, config.dist.hang_floor_s);
  watchdog.record_flights(config.dist.flight_records);
  if (config.dist.flight_records <= 0) return;
  const std::filesystem::path directory = std::filesystem::path(config.run.dir) / "flight";
  // Rank 0's host, process and start: no other job has it, whatever the launcher.
  const std::string job = group.broadcast(
      "flight records' job",
      fmt::format("{} {} {:.6f}", process_host(), ::getpid(), FlightRecorder::now_s()));
  const int world_size = group.size();
  auto write = [directory, job, world_size](const RankFlight& flight) {
    const Hdf5TryLock lock(kHdf5WaitS);
    if (!lock.owns()) throw std::runtime_error("HDF5 stayed busy in another thread");
    RankFlight mine = flight;
    mine.job = job;
    mine.world_size = world_size;
    write_flight_file(directory, mine);
  };
  auto explain = [directory, job, world_size]() {
    const Hdf5TryLock lock(kHdf5WaitS);
    if (!lock.owns()) throw std::runtime_error("HDF5 stayed busy in another thread");
    // Only this job's files: an earlier attempt in the same run.dir left its own.
    return analyse_flight_directory(directory, job, world_size) +
           fmt::format("\nflight records: {} (ddptrain inspect {})", directory.string(),
                       directory.string());
  };
  watchdog.set_flight_output(std::move(write), std::move(explain));
}

}  // namespace ddpt
