// Deadlines for collectives and checkpoint phases (dist.timeout_s). A rank still inside one past
// its deadline asks every rank where it is, names the ranks that did not arrive, and aborts the
// job with exit code 5, instead of hanging until the wall-clock limit.
//
// Training collectives get a deadline that follows the run's pace (set_hang_rule): once the
// warm-up steps are past, a collective still waiting after dist.hang_factor x the slowest recent
// step (at least dist.hang_floor_s) is a hang, unless some rank answers that it is inside a
// phase with a deadline of its own (phase(): a checkpoint write or read, an evaluation), in which
// case it is waited for, up to dist.timeout_s. Collectives queued during a phase of this rank's,
// and those of a thread that does not keep training's pace (Deadline::kTimeout: the background
// checkpoint writer), get dist.timeout_s too. Whatever the deadline, once anything has waited
// dist.hang_floor_s the hang rule asks every rank whether it is there: a rank that gives no
// answer, twice running, is stopped, dead or hung outside ddptrain, and no phase excuses it. A
// hang found either way is reported like a timeout, and every rank that can still act writes its
// flight records (comm/flight_recorder.hpp) first; the reporting rank adds their analysis
// (set_flight_output).
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
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm/flight_analysis.hpp"
#include "comm/flight_recorder.hpp"
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

  // Which deadline a watched collective gets (dist.hang_floor_s's question applies to both).
  enum class Deadline {
    kHangRule,  // the hang rule's, unless queued during a phase of this rank's: dist.timeout_s
    kTimeout,   // dist.timeout_s: a thread that does not keep training's pace
  };
  // `what` names the collective in reports; ranks in the same collective must use the same text
  // (a per-communicator sequence number makes it unique).
  [[nodiscard]] Scope watch(std::string what);
  // A collective that nothing else records (the host group's agreements, the stop vote): watched
  // as watch() does, and kept in the flight records (in `stream`'s sequence), completed when the
  // scope ends.
  struct FlightTag {
    std::string operation;
    int64_t bytes = 0;
    std::string dtype;
    std::string backend;
    std::string stream = FlightRecorder::kTrainingStream;
  };
  [[nodiscard]] Scope watch(std::string what, FlightTag tag,
                            Deadline deadline = Deadline::kHangRule);
  // A phase with a deadline of its own (dist.timeout_s), however long training steps take: a
  // checkpoint write or read, an evaluation. Other ranks waiting for this one meanwhile do not
  // call it a hang.
  [[nodiscard]] Scope phase(std::string what);
  // Hang detection for training collectives: `factor` x the slowest of the recent steps, at least
  // `floor_s` (never past dist.timeout_s); factor 0: dist.timeout_s only. Before any call, and
  // during the first kWarmupSteps steps of the process, dist.timeout_s.
  void set_hang_rule(double factor, double floor_s);
  // The end of an optimizer step that took `seconds` (the training loop calls it).
  void step_took(double seconds);
  // Steps of each process that set no deadline: compilation, first allocations, a resumed run's
  // first steps.
  static constexpr int kWarmupSteps = 3;

  // The training communicator's flight records (null until record_flights()).
  FlightRecorder* flight() { return flight_.get(); }
  void record_flights(int64_t capacity);
  // What a hang does with flight records: `write` saves this rank's (run.dir/flight), `explain`
  // reads every rank's and returns the analysis for the report. Both run on the watchdog's thread.
  void set_flight_output(std::function<void(const RankFlight&)> write,
                         std::function<std::string()> explain);
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
    bool phase = false;          // phase(): a deadline of its own
    bool paced = false;          // a training collective: the hang rule's deadline
    uint64_t flight = 0;         // its flight record, completed when it ends (0: none)
  };
  struct FailureCheck {
    uint64_t id = 0;
    std::string what;
    std::function<std::string()> failure;
  };
  struct Answer {
    int rank = 0;
    bool expired = false;    // past a deadline, or a hang found
    bool reporting = false;  // a hang found: it is reporting, or about to
    int64_t step = 0;
    std::vector<std::pair<double, std::string>> phases;  // seconds inside, what
    bool in_phase = false;  // inside a phase() whose deadline has not passed
  };
  // What a query asks of the rank that receives it.
  enum class Query : char { kWhere = 0, kWhereAndWriteFlight = 1 };

  void loop();
  void unwatch(uint64_t id);
  void answer_queries();
  // Drops the answers whose sends have completed (answer_queries sends without waiting).
  void forget_sent_answers();
  Scope add_entry(std::string what, bool phase, Deadline deadline = Deadline::kHangRule);
  // Under the lock: the deadline of `entry` now, and the hang rule's deadline.
  double deadline_of(const Entry& entry) const;
  double paced_deadline() const;
  bool in_phase() const;  // under the lock
  std::optional<Entry> first_expired();
  // A paced collective past its deadline: whether it is a hang (no rank answers that it is in a
  // phase); if not, it is asked about again a second later.
  bool confirmed_hang(const Entry& entry);
  bool still_watched(uint64_t id);  // not unwatched, nor done
  // The silence question's subject, when it is due (hang rule on, at most once every
  // silence_interval_): this rank's oldest collective that has waited past dist.hang_floor_s,
  // else its oldest phase that has.
  std::optional<Entry> first_past_floor();
  // The ranks that gave no answer to two questions running (empty when every rank answered, or
  // when a rank is already reporting a hang).
  std::vector<int> silent_ranks();
  // This rank's flight records to run.dir/flight, once (set_flight_output).
  void write_flight();
  // The first check that reports a failure: its `what` and the failure.
  std::optional<std::pair<std::string, std::string>> first_failure();
  // Reports a failure and aborts the job with exit code 5.
  [[noreturn]] void on_failure(const std::string& what, const std::string& failure);
  std::string status_text();
  // Asks every other rank where it is; the answers that came within kAnswerGrace, by rank.
  std::vector<std::optional<Answer>> ask_every_rank(Query query);
  // One answer that has arrived into `answers` (counting a rank's first in `answered`); false if
  // none is waiting.
  bool receive_answer(std::vector<std::optional<Answer>>& answers, int& answered);
  // An answer's text (status_text() of rank `rank`), parsed.
  static Answer parse_answer(int rank, const std::string& text);
  // Asks every rank, reports, aborts the job with exit code 5. `silent`: the ranks the silence
  // question found (empty: the entry is past its deadline).
  [[noreturn]] void on_timeout(const Entry& entry, const std::vector<int>& silent = {});
  std::string report(const Entry& entry, const std::vector<int>& silent,
                     const std::vector<std::optional<Answer>>& answers);
  std::string deadline_text(const Entry& entry, const std::vector<int>& silent);

  MpiCommHandle comm_;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_;
  std::vector<std::string> hosts_;  // by rank
  std::atomic<int64_t> step_{0};
  std::unique_ptr<FlightRecorder> flight_;
  std::function<void(const RankFlight&)> write_flight_;
  std::function<std::string()> explain_flights_;
  std::atomic<bool> flight_written_{false};

  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<FailureCheck> failure_checks_;
  uint64_t next_id_ = 1;
  double hang_factor_ = 0;  // 0: no hang rule
  double hang_floor_s_ = 0;
  int64_t steps_seen_ = 0;
  std::vector<double> recent_steps_;   // a ring of the last kRecentSteps steps' seconds
  Clock::time_point hang_asked_{};     // when peers were last asked about a paced deadline
  Clock::time_point last_excuse_{};    // when a rank last answered that it was in a phase
  Clock::time_point silence_asked_{};  // when the silence question was last asked
  Clock::duration silence_interval_ = std::chrono::seconds(1);  // until it is asked again
  struct PendingAnswer {
    std::string text;  // the send's buffer: kept until the send completes
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<PendingAnswer> answers_in_flight_;  // watchdog thread only
  std::vector<bool> silent_;  // by rank: no answer when last asked (watchdog thread only)
  std::atomic<bool> hang_found_{false};  // this rank is reporting or about to: answers say so
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread thread_;  // last: started after the members it uses exist
};

// watchdog->watch(what), or an empty scope when there is no watchdog.
inline Watchdog::Scope watch(Watchdog* watchdog, std::string what) {
  return watchdog ? watchdog->watch(std::move(what)) : Watchdog::Scope();
}

// watchdog->watch(what, tag, deadline), or an empty scope when there is no watchdog.
inline Watchdog::Scope watch(Watchdog* watchdog, std::string what, Watchdog::FlightTag tag,
                             Watchdog::Deadline deadline = Watchdog::Deadline::kHangRule) {
  return watchdog ? watchdog->watch(std::move(what), std::move(tag), deadline) : Watchdog::Scope();
}

// watchdog->phase(what), or an empty scope when there is no watchdog.
inline Watchdog::Scope watch_phase(Watchdog* watchdog, std::string what) {
  return watchdog ? watchdog->phase(std::move(what)) : Watchdog::Scope();
}

}  // namespace ddpt
