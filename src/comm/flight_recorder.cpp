#include "comm/flight_recorder.hpp"

#include <chrono>

namespace ddpt {

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
    : capacity_(static_cast<size_t>(capacity > 0 ? capacity : 0)) {
  ring_.resize(capacity_);
}

double FlightRecorder::now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t FlightRecorder::queued(std::string operation, int64_t bytes, std::string dtype,
                                std::string backend) {
  if (capacity_ == 0) return 0;
  const double now = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t sequence = ++last_sequence_;
  FlightRecord& record = ring_[(sequence - 1) % capacity_];
  record = FlightRecord{};
  record.sequence = sequence;
  record.operation = std::move(operation);
  record.bytes = bytes;
  record.dtype = std::move(dtype);
  record.backend = std::move(backend);
  record.queued_s = now;
  return sequence;
}

FlightRecord* FlightRecorder::find(uint64_t sequence) {
  if (capacity_ == 0 || sequence == 0) return nullptr;
  FlightRecord& record = ring_[(sequence - 1) % capacity_];
  return record.sequence == sequence ? &record : nullptr;
}

void FlightRecorder::started(uint64_t sequence) {
  const double now = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  if (FlightRecord* record = find(sequence)) {
    record->started_s = now;
    record->state = FlightState::kStarted;
  }
}

void FlightRecorder::completed(uint64_t sequence) {
  const double now = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  if (FlightRecord* record = find(sequence)) {
    if (record->started_s == 0) record->started_s = now;
    record->ended_s = now;
    record->state = FlightState::kCompleted;
  }
}

std::vector<FlightRecord> FlightRecorder::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightRecord> kept;
  if (capacity_ == 0) return kept;
  const uint64_t first = last_sequence_ > capacity_ ? last_sequence_ - capacity_ + 1 : 1;
  for (uint64_t s = first; s <= last_sequence_; ++s) kept.push_back(ring_[(s - 1) % capacity_]);
  return kept;
}

}  // namespace ddpt
