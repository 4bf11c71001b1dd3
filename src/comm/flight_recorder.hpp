// The flight recorder: each rank's last collectives on the training communicator, kept in a ring
// (dist.flight_records of them), so that a hang can be explained after the fact: which
// collective each rank was in, and the first one where the ranks' sequences part (a rank that
// never arrived, or ranks in different collectives under the same number). The watchdog writes
// the ring to run.dir/flight/rank_NNNNN.h5 when a hang is found (io/flight_file.hpp), and
// comm/flight_analysis.hpp compares the ranks' files.
//
// A record is made when a collective is queued and updated when it starts and when it completes.
// Each stream (the collectives one thread issues on its communicators, in program order:
// kTrainingStream for the training thread's, another name for the background checkpoint
// writer's) numbers its collectives 1, 2, ... by itself, so the numbers match across ranks that
// run the same program even though the threads' collectives interleave differently on each rank.
// What "started" means depends on the backend: on MPI the communication thread (or the calling
// thread, for host agreements) has entered the call; on NCCL the GPU stream has reached the
// collective (its start event fired), while "queued" means it still waits behind earlier work
// there. Times are seconds since the Unix epoch, comparable across nodes as far as their clocks
// agree.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ddpt {

enum class FlightState { kQueued, kStarted, kCompleted };

const char* flight_state_name(FlightState state);

struct FlightRecord {
  std::string stream;     // whose sequence: FlightRecorder::kTrainingStream, ...
  uint64_t sequence = 0;  // 1, 2, ... per stream, in the order the rank queued them
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
  // The training thread's collectives (gradients, gathers, its host agreements, the stop vote).
  static constexpr const char* kTrainingStream = "training";

  // Keeps the last `capacity` records of each stream; 0 keeps none (and costs nothing). A ring
  // per stream: a stream's records go only as that stream goes on, the same on every rank.
  explicit FlightRecorder(int64_t capacity);

  bool enabled() const { return capacity_ > 0; }
  // A new record in `stream`, queued now, numbered next in that stream; the record's handle for
  // started() and completed() (0 when disabled).
  uint64_t queued(const std::string& stream, std::string operation, int64_t bytes,
                  std::string dtype, std::string backend);
  // The first call counts; a record already overwritten is left alone.
  void started(uint64_t handle);
  void completed(uint64_t handle);
  // The records kept, of every stream, oldest first.
  std::vector<FlightRecord> records() const;

  static double now_s();

 private:
  struct Ring {
    std::string stream;
    std::vector<FlightRecord> records;  // slot: (sequence - 1) % capacity
    uint64_t last_sequence = 0;
  };
  FlightRecord* find(uint64_t handle);  // under the lock; null when already overwritten

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Ring> rings_;  // by stream, in the order of their first record
};

}  // namespace ddpt
