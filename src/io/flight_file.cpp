#include "io/flight_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <algorithm>
#include <regex>

#include "h5/h5_file.hpp"
#include "io/staged_file.hpp"
#include "io/staged_h5_file.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Format 2 adds each record's stream and the file's job; format 1's records are one stream.
constexpr const char* kFormat = "ddptrain flight records 2";
constexpr const char* kFormat1 = "ddptrain flight records 1";
const std::regex kFileName(R"(rank_(\d{5,})\.h5)");

template <class T, class Field>
torch::Tensor column(const std::vector<FlightRecord>& records, torch::ScalarType dtype,
                     Field field) {
  std::vector<T> values;
  values.reserve(records.size());
  for (const FlightRecord& record : records) values.push_back(static_cast<T>(field(record)));
  return torch::tensor(values, torch::TensorOptions(dtype)).reshape({-1});
}

template <class Field>
std::vector<std::string> text_column(const std::vector<FlightRecord>& records, Field field) {
  std::vector<std::string> values;
  values.reserve(records.size());
  for (const FlightRecord& record : records) values.emplace_back(field(record));
  return values;
}

FlightState state_named(const std::string& name) {
  if (name == "completed") return FlightState::kCompleted;
  if (name == "started") return FlightState::kStarted;
  return FlightState::kQueued;
}

RankFlight read_flight_file(const std::filesystem::path& path) {
  const H5File file = H5File::open_read(path.string());
  const std::string format =
      file.has_attribute("format") ? file.read_string_attribute("format") : "";
  if (format != kFormat && format != kFormat1) {
    throw DataError(fmt::format("'{}' is not a ddptrain flight file", path.string()),
                    Raised::kThisRank);
  }
  const bool streams = format == kFormat;
  RankFlight flight;
  flight.rank = static_cast<int>(file.read_int_attribute("rank"));
  flight.host = file.read_string_attribute("host");
  flight.step = file.read_int_attribute("step");
  flight.written_s = file.read_double_attribute("written_s");
  flight.world_size = static_cast<int>(file.read_int_attribute("world_size"));
  // Format 1 names no job: its files go together by their rank count.
  flight.job = streams ? file.read_string_attribute("job")
                       : fmt::format("format 1, {} ranks", flight.world_size);
  const torch::Tensor sequence = file.read_tensor("sequence").to(torch::kLong);
  const torch::Tensor bytes = file.read_tensor("bytes").to(torch::kLong);
  const torch::Tensor queued = file.read_tensor("queued_s").to(torch::kDouble);
  const torch::Tensor started = file.read_tensor("started_s").to(torch::kDouble);
  const torch::Tensor ended = file.read_tensor("ended_s").to(torch::kDouble);
  const auto operation = file.read_strings("operation");
  const auto dtype = file.read_strings("dtype");
  const auto backend = file.read_strings("backend");
  const auto state = file.read_strings("state");
  const int64_t n = sequence.numel();
  const auto stream =
      streams ? file.read_strings("stream")
              : std::vector<std::string>(static_cast<size_t>(n), FlightRecorder::kTrainingStream);
  for (const int64_t size :
       {bytes.numel(), queued.numel(), started.numel(), ended.numel(),
        static_cast<int64_t>(operation.size()), static_cast<int64_t>(dtype.size()),
        static_cast<int64_t>(backend.size()), static_cast<int64_t>(state.size()),
        static_cast<int64_t>(stream.size())}) {
    if (size != n) {
      throw DataError(fmt::format("'{}': its columns differ in length", path.string()),
                      Raised::kThisRank);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    flight.records.push_back({stream[k], static_cast<uint64_t>(sequence[i].item<int64_t>()),
                              operation[k], bytes[i].item<int64_t>(), dtype[k], backend[k],
                              queued[i].item<double>(), started[i].item<double>(),
                              ended[i].item<double>(), state_named(state[k])});
  }
  return flight;
}

}  // namespace

std::filesystem::path flight_file_path(const std::filesystem::path& directory, int rank) {
  return directory / fmt::format("rank_{:05d}.h5", rank);
}

void write_flight_file(const std::filesystem::path& directory, const RankFlight& flight) {
  std::filesystem::create_directories(directory);
  const std::filesystem::path path = flight_file_path(directory, flight.rank);
  const StagedOutput output{fmt::format("flight record '{}'", path.string())};
  write_staged_h5(path, MPI_COMM_NULL, output, [&](H5File& file) {
    file.write_attribute("format", std::string(kFormat));
    file.write_attribute("rank", static_cast<int64_t>(flight.rank));
    file.write_attribute("world_size", static_cast<int64_t>(flight.world_size));
    file.write_attribute("host", flight.host);
    file.write_attribute("job", flight.job);
    file.write_attribute("step", flight.step);
    file.write_attribute("written_s", flight.written_s);
    const auto& r = flight.records;
    file.write_tensor("sequence",
                      column<int64_t>(r, torch::kLong, [](auto& x) { return x.sequence; }), true);
    file.write_tensor("bytes", column<int64_t>(r, torch::kLong, [](auto& x) { return x.bytes; }),
                      true);
    file.write_tensor("queued_s",
                      column<double>(r, torch::kDouble, [](auto& x) { return x.queued_s; }), true);
    file.write_tensor("started_s",
                      column<double>(r, torch::kDouble, [](auto& x) { return x.started_s; }), true);
    file.write_tensor("ended_s",
                      column<double>(r, torch::kDouble, [](auto& x) { return x.ended_s; }), true);
    file.write_strings("stream", text_column(r, [](auto& x) { return x.stream; }));
    file.write_strings("operation", text_column(r, [](auto& x) { return x.operation; }));
    file.write_strings("dtype", text_column(r, [](auto& x) { return x.dtype; }));
    file.write_strings("backend", text_column(r, [](auto& x) { return x.backend; }));
    file.write_strings("state", text_column(r, [](auto& x) { return flight_state_name(x.state); }));
  });
  publish_staged(path);
}

bool is_flight_directory(const std::filesystem::path& directory) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (std::regex_match(entry.path().filename().string(), kFileName)) return true;
  }
  return false;
}

FlightDirectory read_flight_directory(const std::filesystem::path& directory) {
  FlightDirectory read;
  bool any = false;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, kFileName)) continue;
    any = true;
    try {
      read.flights.push_back(read_flight_file(entry.path()));
    } catch (const Error& e) {
      read.unreadable.push_back(fmt::format("{} ({})", name, e.what()));
    }
  }
  if (!any) {
    throw DataError(fmt::format("'{}' holds no flight file (rank_NNNNN.h5)", directory.string()),
                    Raised::kThisRank);
  }
  std::sort(read.flights.begin(), read.flights.end(),
            [](const RankFlight& a, const RankFlight& b) { return a.rank < b.rank; });
  return read;
}

std::string analyse_flight_directory(const std::filesystem::path& directory,
                                     const std::optional<std::string>& job, int world_size) {
  FlightDirectory read = read_flight_directory(directory);
  JobFlights chosen = flights_of_job(std::move(read.flights), job);
  if (chosen.flights.empty() && !job) {
    throw DataError(fmt::format("'{}' holds no readable flight file: {}", directory.string(),
                                fmt::join(read.unreadable, "; ")),
                    Raised::kThisRank);
  }
  std::string text =
      analyse_flights(std::move(chosen.flights), world_size > 0 ? world_size : chosen.world_size)
          .text;
  if (!chosen.left_out.empty()) text += "\n" + chosen.left_out;
  if (!read.unreadable.empty()) {
    text += fmt::format("\nleft out {} flight file(s) that could not be read: {}",
                        read.unreadable.size(), fmt::join(read.unreadable, "; "));
  }
  return text;
}

}  // namespace ddpt
