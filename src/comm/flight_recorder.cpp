#include "comm/flight_recorder.hpp"

#include <algorithm>
#include <chrono>

namespace ddpt {
namespace {

// A handle: the stream's index in the high bits, the record's sequence number in the low ones.
constexpr int kSequenceBits = 48;
constexpr uint64_t kSequenceMask = (uint64_t{1} << kSequenceBits) - 1;

}  // namespace

const char* flight_state_name(FlightState state) {
  switch (state) {
    case FlightState::kStarted:
      return "started";
    case FlightState::kCompleted:
      return "completed";
    case FlightState::kQueued:
      break;
  }
  return "queued";
}

FlightRecorder::FlightRecorder(int64_t capacity)
    : capacity_(static_cast<size_t>(capacity > 0 ? capacity : 0)) {}

double FlightRecorder::now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t FlightRecorder::queued(const std::string& stream, std::string operation, int64_t bytes,
                                std::string dtype, std::string backend) {
  if (capacity_ == 0) return 0;
  const double now = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  auto ring =
      std::find_if(rings_.begin(), rings_.end(), [&](const Ring& r) { return r.stream == stream; });
  if (ring == rings_.end()) {
    rings_.push_back({stream, std::vector<FlightRecord>(capacity_), 0});
    ring = rings_.end() - 1;
  }
  const uint64_t sequence = ++ring->last_sequence;
  FlightRecord& record = ring->records[(sequence - 1) % capacity_];
  record = FlightRecord{};
  record.stream = stream;
  record.sequence = sequence;
  record.operation = std::move(operation);
  record.bytes = bytes;
  record.dtype = std::move(dtype);
  record.backend = std::move(backend);
  record.queued_s = now;
  const auto index = static_cast<uint64_t>(ring - rings_.begin());
  return (index << kSequenceBits) | sequence;
}

FlightRecord* FlightRecorder::find(uint64_t handle) {
  if (capacity_ == 0 || handle == 0) return nullptr;
  const uint64_t index = handle >> kSequenceBits;
  const uint64_t sequence = handle & kSequenceMask;
  if (index >= rings_.size()) return nullptr;
  FlightRecord& record = rings_[index].records[(sequence - 1) % capacity_];
  return record.sequence == sequence ? &record : nullptr;
}

void FlightRecorder::started(uint64_t handle) {
  const double now = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  FlightRecord* record = find(handle);
  if (record && record->state == FlightState::kQueued) {
    record->started_s = now;
    record->state = FlightState::kStarted;
  }
}

void FlightRecorder::completed(uint64_t handle) {
  const double now = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  if (FlightRecord* record = find(handle)) {
    if (record->started_s == 0) record->started_s = now;
    record->ended_s = now;
    record->state = FlightState::kCompleted;
  }
}

std::vector<FlightRecord> FlightRecorder::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightRecord> kept;
  for (const Ring& ring : rings_) {
    const uint64_t last = ring.last_sequence;
    const uint64_t first = last > capacity_ ? last - capacity_ + 1 : 1;
    for (uint64_t s = first; s <= last; ++s) kept.push_back(ring.records[(s - 1) % capacity_]);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const FlightRecord& a, const FlightRecord& b) {
    return a.queued_s < b.queued_s;
  });
  return kept;
}

}  // namespace ddpt
