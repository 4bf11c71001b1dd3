// Deadlines for collectives and checkpoint phases (dist.timeout_s). A rank still inside one past
// its deadline asks every rank where it is, names the ranks that did not arrive, and aborts the
// job with exit code 5, instead of hanging until the wall-clock limit.
//
// Callers say what they are doing with watch() (a scope) or watch_until() (work that completes
// on a CUDA stream). A thread checks the deadlines and answers the other ranks' questions over a
// duplicate of the world communicator, so a rank busy computing or stuck in a collective of its
// own still answers; a stopped or dead rank does not, and is named for it. The same thread asks
// failure checks (watch_for_failure(): NCCL's asynchronous error) and ends the job on the first
// failure, without waiting for a deadline.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/mpi_comm_handle.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

class Watchdog {
 public:
  // When the thread runs: with peers only (a 1-rank job has nobody who can fail to arrive), or
  // always (tests/support/watchdog_cuda_probe.cpp: the CUDA-event path on one GPU, where NCCL
  // allows one rank only).
  enum class Start { kWithPeers, kAlways };
  // Collective over `comm` (duplicates it, gathers the host names).
  Watchdog(MPI_Comm comm, double timeout_s, Start start = Start::kWithPeers);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Watched from construction to destruction. A default-constructed scope watches nothing.
  class Scope {
   public:
    Scope() = default;
    Scope(Scope&& other) noexcept;
    Scope& operator=(Scope&&) = delete;
    Scope(const Scope&) = delete;
    ~Scope();

   private:
    friend class Watchdog;
    Scope(Watchdog* owner, uint64_t id) : owner_(owner), id_(id) {}
    Watchdog* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  // `what` names the phase in reports; ranks in the same collective must use the same text
  // (a per-communicator sequence number makes it unique).
  [[nodiscard]] Scope watch(std::string what);
  // Watched until done() returns true (called from the watchdog's thread).
  void watch_until(std::string what, std::function<bool()> done);
  // While the returned scope lives, `failure` is asked at every poll, from the watchdog's thread
  // and under its lock (so it must be cheap and thread-safe). A non-empty answer is a failure
  // this rank cannot recover from, such as NCCL's asynchronous error after a peer or the network
  // failed: it is reported at once, naming `what`, and the job aborted with exit code 5, instead
  // of waiting for a collective's deadline.
  [[nodiscard]] Scope watch_for_failure(std::string what, std::function<std::string()> failure);
  // The optimizer step in progress, for reports.
  void set_step(int64_t step) { step_.store(step, std::memory_order_relaxed); }

 private:
  struct Entry {
    uint64_t id = 0;
    std::string what;
    int64_t step = 0;
    Clock::time_point since;
    std::function<bool()> done;  // empty for scopes
  };
  struct FailureCheck {
    uint64_t id = 0;
    std::string what;
    std::function<std::string()> failure;
  };
  struct Answer {
    int rank = 0;
    bool expired = false;
    int64_t step = 0;
    std::vector<std::pair<double, std::string>> phases;  // seconds inside, what
  };

  void loop();
  void unwatch(uint64_t id);
  void answer_queries();
  std::optional<Entry> first_expired();
  // The first check that reports a failure: its `what` and the failure.
  std::optional<std::pair<std::string, std::string>> first_failure();
  // Reports a failure and aborts the job with exit code 5.
  [[noreturn]] void on_failure(const std::string& what, const std::string& failure);
  std::string status_text();
  // Asks every other rank where it is; the answers that came within kAnswerGrace, by rank.
  std::vector<std::optional<Answer>> ask_every_rank();
  // An answer's text (status_text() of rank `rank`), parsed.
  static Answer parse_answer(int rank, const std::string& text);
  // Asks every rank, reports, aborts the job with exit code 5.
  [[noreturn]] void on_timeout(const Entry& entry);
  std::string report(const Entry& entry, const std::vector<std::optional<Answer>>& answers) const;

  MpiCommHandle comm_;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_;
  std::vector<std::string> hosts_;  // by rank
  std::atomic<int64_t> step_{0};

  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<FailureCheck> failure_checks_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread thread_;  // last: started after the members it uses exist
};

// watchdog->watch(what), or an empty scope when there is no watchdog.
inline Watchdog::Scope watch(Watchdog* watchdog, std::string what) {
  return watchdog ? watchdog->watch(std::move(what)) : Watchdog::Scope();
}

}  // namespace ddpt
