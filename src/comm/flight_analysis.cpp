#include "comm/flight_analysis.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ctime>
#include <limits>
#include <utility>

namespace ddpt {
namespace {

const FlightRecord* record_of(const RankFlight& flight, const std::string& stream,
                              uint64_t sequence) {
  for (const FlightRecord& record : flight.records) {
    if (record.sequence == sequence && record.stream == stream) return &record;
  }
  return nullptr;
}

// The streams in the records, in the order they first appear.
std::vector<std::string> streams_of(const std::vector<RankFlight>& flights) {
  std::vector<std::string> streams;
  for (const RankFlight& flight : flights) {
    for (const FlightRecord& record : flight.records) {
      if (std::find(streams.begin(), streams.end(), record.stream) == streams.end()) {
        streams.push_back(record.stream);
      }
    }
  }
  return streams;
}

// The numbers of `stream` that every rank with records of it still keeps (older ones are gone
// from some ring): [first, last]; last 0 when there are none.
std::pair<uint64_t, uint64_t> kept_range(const std::vector<RankFlight>& flights,
                                         const std::string& stream) {
  uint64_t first = 1;
  uint64_t last = 0;
  for (const RankFlight& flight : flights) {
    uint64_t oldest = std::numeric_limits<uint64_t>::max();
    for (const FlightRecord& record : flight.records) {
      if (record.stream != stream) continue;
      oldest = std::min(oldest, record.sequence);
      last = std::max(last, record.sequence);
    }
    if (oldest != std::numeric_limits<uint64_t>::max()) first = std::max(first, oldest);
  }
  return {first, last};
}

bool same_collective(const FlightRecord& a, const FlightRecord& b) {
  return a.operation == b.operation && a.bytes == b.bytes && a.dtype == b.dtype;
}

// The state as the backend can tell it: NCCL's "started" is its GPU stream reaching the
// collective (an event), and "queued" that it waits behind earlier work on that stream.
std::string state_text(const FlightRecord& record) {
  std::string state = flight_state_name(record.state);
  if (record.backend == "NCCL" && record.state == FlightState::kStarted) {
    state += " (its GPU stream reached it)";
  } else if (record.backend == "NCCL" && record.state == FlightState::kQueued) {
    state += " (behind earlier work on its GPU stream)";
  }
  return state;
}

std::string describe(const FlightRecord& record, double written_s) {
  std::string state = state_text(record);
  if (record.state != FlightState::kCompleted) {
    const double since = record.started_s > 0 ? record.started_s : record.queued_s;
    state += fmt::format(", not completed {:.1f} s later", std::max(0.0, written_s - since));
  }
  return fmt::format("#{} {} of {} B {} ({}): {}", record.sequence, record.operation, record.bytes,
                     record.dtype, record.backend, state);
}

std::string who(const RankFlight& flight) {
  return fmt::format("rank {} ({}, step {})", flight.rank, flight.host, flight.step);
}

// Ranks of the world with no flight file, and the text's first line.
std::string describe_files(const std::vector<RankFlight>& flights, int world_size,
                           FlightAnalysis& analysis) {
  std::vector<int> with_records;
  for (const RankFlight& flight : flights) with_records.push_back(flight.rank);
  for (int r = 0; r < world_size; ++r) {
    if (std::find(with_records.begin(), with_records.end(), r) == with_records.end()) {
      analysis.without_records.push_back(r);
    }
  }
  std::string text =
      fmt::format("flight records of rank(s) {} of {}", fmt::join(with_records, ", "), world_size);
  if (!analysis.without_records.empty()) {
    text += fmt::format("; no file from rank(s) {} (stopped, killed, or hung outside ddptrain)",
                        fmt::join(analysis.without_records, ", "));
  }
  return text;
}

// The first number of `stream` in [first, last] that some rank lacks or has not completed.
std::optional<FlightParting> find_parting(const std::vector<RankFlight>& flights,
                                          const std::string& stream, uint64_t first,
                                          uint64_t last) {
  for (uint64_t s = first; s <= last; ++s) {
    const FlightRecord* reference = nullptr;
    bool parted = false;
    bool different = false;
    for (const RankFlight& flight : flights) {
      const FlightRecord* record = record_of(flight, stream, s);
      if (record == nullptr) {
        parted = true;
        continue;
      }
      if (reference != nullptr && !same_collective(*reference, *record)) different = true;
      if (reference == nullptr) reference = record;
      parted = parted || record->state != FlightState::kCompleted;
    }
    if (parted) return FlightParting{stream, s, different, {}};
  }
  return std::nullopt;
}

// When the ranks' records at the parting were first queued: the parting that came first leads.
double parted_at(const std::vector<RankFlight>& flights, const FlightParting& parting) {
  double earliest = std::numeric_limits<double>::max();
  for (const RankFlight& flight : flights) {
    if (const FlightRecord* record = record_of(flight, parting.stream, parting.sequence)) {
      earliest = std::min(earliest, record->queued_s);
    }
  }
  return earliest;
}

// Each rank at the parting collective, and who never reached it.
std::string describe_parting(const std::vector<RankFlight>& flights,
                             const std::vector<int>& without_records, FlightParting& parting) {
  const uint64_t s = parting.sequence;
  std::string text =
      fmt::format("\ncollective #{} of '{}' is where the ranks part{}:", s, parting.stream,
                  parting.different_collectives ? " (they are in different collectives)" : "");
  for (const RankFlight& flight : flights) {
    const FlightRecord* record = record_of(flight, parting.stream, s);
    if (record != nullptr) {
      text += fmt::format("\n  {}: {}", who(flight), describe(*record, flight.written_s));
      continue;
    }
    parting.never_reached.push_back(flight.rank);
    const FlightRecord* latest = nullptr;
    for (const FlightRecord& r : flight.records) {
      if (r.stream == parting.stream) latest = &r;
    }
    text += fmt::format("\n  {}: never reached #{}; its latest: {}", who(flight), s,
                        latest ? describe(*latest, flight.written_s) : "none recorded");
  }
  if (!parting.never_reached.empty()) {
    text += fmt::format("\nranks that never reached #{}: {}", s,
                        fmt::join(parting.never_reached, ", "));
  }
  if (!without_records.empty()) {
    text += fmt::format("\nranks with no record, so not known to have reached #{}: {}", s,
                        fmt::join(without_records, ", "));
  }
  return text;
}

// Every stream's kept range, for the text when no stream parts.
std::string completed_alike(const std::vector<RankFlight>& flights,
                            const std::vector<std::string>& streams) {
  std::vector<std::string> ranges;
  for (const std::string& stream : streams) {
    const auto [first, last] = kept_range(flights, stream);
    if (last > 0) ranges.push_back(fmt::format("'{}' #{} to #{}", stream, first, last));
  }
  if (ranges.empty()) return "\nno collective was recorded";
  return fmt::format(
      "\nevery rank completed collectives {} alike: the ranks with records did not part there",
      fmt::join(ranges, ", "));
}

std::string time_text(double seconds) {
  return fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", fmt::gmtime(static_cast<std::time_t>(seconds)));
}

}  // namespace

FlightAnalysis analyse_flights(std::vector<RankFlight> flights, int world_size) {
  std::sort(flights.begin(), flights.end(),
            [](const RankFlight& a, const RankFlight& b) { return a.rank < b.rank; });
  FlightAnalysis analysis;
  std::string text = describe_files(flights, world_size, analysis);
  const std::vector<std::string> streams = streams_of(flights);
  for (const std::string& stream : streams) {
    const auto [first, last] = kept_range(flights, stream);
    if (auto parting = find_parting(flights, stream, first, last)) {
      analysis.partings.push_back(std::move(*parting));
    }
  }
  std::stable_sort(analysis.partings.begin(), analysis.partings.end(),
                   [&](const FlightParting& a, const FlightParting& b) {
                     return parted_at(flights, a) < parted_at(flights, b);
                   });
  for (FlightParting& parting : analysis.partings) {
    text += describe_parting(flights, analysis.without_records, parting);
  }
  if (analysis.partings.empty()) text += completed_alike(flights, streams);
  analysis.text = text;
  return analysis;
}

JobFlights flights_of_job(std::vector<RankFlight> flights, const std::optional<std::string>& job) {
  JobFlights chosen;
  if (flights.empty()) return chosen;
  const auto newest =
      std::max_element(flights.begin(), flights.end(),
                       [](const auto& a, const auto& b) { return a.written_s < b.written_s; });
  chosen.job = job ? *job : newest->job;
  std::vector<std::string> left_out;
  for (RankFlight& flight : flights) {
    if (flight.job == chosen.job) {
      chosen.world_size = flight.world_size;
      chosen.flights.push_back(std::move(flight));
    } else {
      left_out.push_back(fmt::format("rank {} of a job of {} ranks, written {}", flight.rank,
                                     flight.world_size, time_text(flight.written_s)));
    }
  }
  if (!left_out.empty()) {
    chosen.left_out = fmt::format("left out {} flight file(s) of other jobs: {}", left_out.size(),
                                  fmt::join(left_out, "; "));
  }
  return chosen;
}

}  // namespace ddpt
