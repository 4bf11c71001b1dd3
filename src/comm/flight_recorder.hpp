// The flight recorder: each rank's last collectives on the training communicator, kept in a ring
// (dist.flight_records of them), so that a hang can be explained after the fact: which
// collective each rank was in, and the first one where the ranks' sequences part (a rank that
// never arrived, or ranks in different collectives under the same number). The watchdog writes
// the ring to run.dir/flight/rank_NNNNN.h5 when a hang is found (comm/flight_file.hpp), and
// comm/flight_analysis.hpp compares the ranks' files.
//
// A record is made when a collective is queued (on the calling thread, in program order, so the
// sequence numbers match across ranks that run the same program) and updated when the
// communication thread starts it and when it completes. Times are seconds since the Unix epoch,
// comparable across nodes as far as their clocks agree.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ddpt {

enum class FlightState { kQueued, kStarted, kCompleted };

const char* flight_state_name(FlightState state);

struct FlightRecord {
  uint64_t sequence = 0;  // 1, 2, ... per communicator, in the order the rank queued them
  std::string operation;  // "all_reduce", "reduce_scatter", "all_gather", "broadcast", ...
  int64_t bytes = 0;
  std::string dtype;    // "float32", ...
  std::string backend;  // "MPI", "MPI shared memory", "NCCL"
  double queued_s = 0;
  double started_s = 0;  // 0: not yet
  double ended_s = 0;    // 0: not yet
  FlightState state = FlightState::kQueued;
};

class FlightRecorder {
 public:
  // Keeps the last `capacity` records; 0 keeps none (and costs nothing).
  explicit FlightRecorder(int64_t capacity);

  bool enabled() const { return capacity_ > 0; }
  // A new record, queued now; its sequence number (0 when disabled).
  uint64_t queued(std::string operation, int64_t bytes, std::string dtype, std::string backend);
  void started(uint64_t sequence);
  void completed(uint64_t sequence);
  // The records kept, oldest first.
  std::vector<FlightRecord> records() const;

  static double now_s();

 private:
  FlightRecord* find(uint64_t sequence);  // under the lock; null when already overwritten

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<FlightRecord> ring_;  // slot: (sequence - 1) % capacity
  uint64_t last_sequence_ = 0;
};

}  // namespace ddpt
