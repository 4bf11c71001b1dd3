// Numbers 0 to count - 1, each handed to one rank as it asks: how `ddptrain generate` deals its
// batches, so that a rank whose rows end early takes the next batch at once instead of waiting for
// the slowest rank of a round. Rank 0 holds the counter and answers the other ranks from a thread
// of its own, on a communicator of its own (MPI_THREAD_MULTIPLE), looking for a question every
// kPoll instead of waiting inside MPI: Open MPI's waits spin, and would take a core from rank 0's
// own work. The other ranks keep one question ahead (each asks for its next number as it takes
// one), so that the polling's delay hides behind the batch in hand; a millisecond's poll wakes
// rank 0 a thousand times a second, little beside the work on its core. A stop closes the counter:
// every later question is answered kStopped, and the numbers not handed out go to nobody.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "comm/watchdog.hpp"
#include "runtime/mpi_comm_handle.hpp"

namespace ddpt {

class WorkCounter {
 public:
  static constexpr int64_t kNone = -1;     // every number was handed out
  static constexpr int64_t kStopped = -2;  // a rank stopped the handing out first
  static constexpr std::chrono::milliseconds kPoll{1};

  // Collective over `comm` (MPI_Comm_dup): numbers below `count`. `watchdog` (may be null)
  // watches each wait for rank 0's answer as a phase (dist.timeout_s).
  WorkCounter(MPI_Comm comm, int64_t count, Watchdog* watchdog);
  // Rank 0 waits for its thread, which ends once every rank has had its last answer; when an
  // exception unwinds through it instead, the thread stops looking for questions at once.
  ~WorkCounter();
  WorkCounter(const WorkCounter&) = delete;
  WorkCounter& operator=(const WorkCounter&) = delete;

  // This rank's next number; kNone or kStopped when there is none, after which the rank asks no
  // more. `stop` (a signal came): a number already on its way to this rank is still taken, and
  // the counter closes (unless every number is out), so every rank ends after its batch in hand.
  int64_t next(bool stop);
  // Rank 0: the numbers handed out so far (0 on the others).
  int64_t handed_out() const;

 private:
  int64_t take(bool stop);  // rank 0, under the lock
  void serve();             // rank 0's thread
  void ask(bool stop);      // the other ranks: posts the question and the answer's receive

  MpiCommHandle comm_;
  int rank_ = 0;
  int size_ = 1;
  Watchdog* watchdog_;
  const int64_t count_;
  // Rank 0's counter.
  mutable std::mutex mutex_;
  int64_t next_ = 0;
  bool closed_ = false;
  std::atomic<bool> quit_{false};
  std::thread server_;
  // The other ranks' question in flight and its answer.
  int64_t question_ = 0;
  int64_t answer_ = 0;
  MPI_Request question_request_ = MPI_REQUEST_NULL;
  MPI_Request answer_request_ = MPI_REQUEST_NULL;  // MPI_REQUEST_NULL: no question in flight
};

}  // namespace ddpt
