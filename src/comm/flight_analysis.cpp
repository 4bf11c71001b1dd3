#include "comm/flight_analysis.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace ddpt {
namespace {

const FlightRecord* record_of(const RankFlight& flight, uint64_t sequence) {
  for (const FlightRecord& record : flight.records) {
    if (record.sequence == sequence) return &record;
  }
  return nullptr;
}

uint64_t last_sequence(const RankFlight& flight) {
  return flight.records.empty() ? 0 : flight.records.back().sequence;
}

bool same_collective(const FlightRecord& a, const FlightRecord& b) {
  return a.operation == b.operation && a.bytes == b.bytes && a.dtype == b.dtype;
}

std::string describe(const FlightRecord& record, double written_s) {
  std::string state = flight_state_name(record.state);
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

// The first sequence number in [first, last] where the ranks part (analysis.sequence; 0: none).
void find_parting(const std::vector<RankFlight>& flights, uint64_t first, uint64_t last,
                  FlightAnalysis& analysis) {
  for (uint64_t s = first; s <= last && analysis.sequence == 0; ++s) {
    const FlightRecord* reference = nullptr;
    bool parted = false;
    for (const RankFlight& flight : flights) {
      const FlightRecord* record = record_of(flight, s);
      if (record == nullptr) {
        parted = true;
        continue;
      }
      if (reference != nullptr && !same_collective(*reference, *record)) {
        analysis.different_collectives = true;
      }
      if (reference == nullptr) reference = record;
      parted = parted || record->state != FlightState::kCompleted;
    }
    if (parted || analysis.different_collectives) analysis.sequence = s;
  }
}

// Each rank at the parting collective, and who never reached it.
std::string describe_parting(const std::vector<RankFlight>& flights, FlightAnalysis& analysis) {
  const uint64_t s = analysis.sequence;
  std::string text =
      fmt::format("\ncollective #{} is where the ranks part{}:", s,
                  analysis.different_collectives ? " (they are in different collectives)" : "");
  for (const RankFlight& flight : flights) {
    const FlightRecord* record = record_of(flight, s);
    if (record != nullptr) {
      text += fmt::format("\n  {}: {}", who(flight), describe(*record, flight.written_s));
      continue;
    }
    analysis.never_reached.push_back(flight.rank);
    const std::string latest = flight.records.empty()
                                   ? "none recorded"
                                   : describe(flight.records.back(), flight.written_s);
    text += fmt::format("\n  {}: never reached #{}; its latest: {}", who(flight), s, latest);
  }
  if (!analysis.never_reached.empty()) {
    text += fmt::format("\nranks that never reached #{}: {}", s,
                        fmt::join(analysis.never_reached, ", "));
  }
  if (!analysis.without_records.empty()) {
    text += fmt::format("\nranks with no record, so not known to have reached #{}: {}", s,
                        fmt::join(analysis.without_records, ", "));
  }
  return text;
}

}  // namespace

FlightAnalysis analyse_flights(std::vector<RankFlight> flights, int world_size) {
  std::sort(flights.begin(), flights.end(),
            [](const RankFlight& a, const RankFlight& b) { return a.rank < b.rank; });
  FlightAnalysis analysis;
  std::string text = describe_files(flights, world_size, analysis);
  // From the newest first record any rank kept (older ones are gone from some ring) on.
  uint64_t first = 1;
  uint64_t last = 0;
  for (const RankFlight& flight : flights) {
    if (!flight.records.empty()) first = std::max(first, flight.records.front().sequence);
    last = std::max(last, last_sequence(flight));
  }
  find_parting(flights, first, last, analysis);
  if (analysis.sequence != 0) {
    text += describe_parting(flights, analysis);
  } else if (last == 0) {
    text += "\nno collective was recorded";
  } else {
    text += fmt::format(
        "\nevery rank completed collectives #{} to #{} alike: the ranks with records did not "
        "part there",
        first, last);
  }
  analysis.text = text;
  return analysis;
}

}  // namespace ddpt
