#include "comm/watchdog.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "comm/make_communicator.hpp"
#include "comm/watchdog_questions.hpp"
#include "runtime/gather_strings.hpp"
#include "util/check.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"

namespace ddpt {
namespace {

// How often deadlines are checked and questions answered: well under any sensible timeout, and
// rare enough to cost nothing.
constexpr auto kPollInterval = std::chrono::milliseconds(100);
// How long a timed-out rank that is not the reporter waits for the reporter's abort.
constexpr auto kReporterGrace = std::chrono::seconds(5);
// Steps whose times the hang rule remembers: the slowest of them sets the pace.
constexpr size_t kRecentSteps = 50;

// Ends every rank with exit code 5: the device communicators first (so NCCL peers fail instead
// of hanging), then the MPI job; _Exit if MPI_Abort returns.
[[noreturn]] void abort_job() {
  abort_device_communicators();
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::kTimeout));
  std::_Exit(static_cast<int>(ExitCode::kTimeout));
}

}  // namespace

using watchdog_detail::kAnswerGrace;
using watchdog_detail::kAskAgain;
using watchdog_detail::kSilenceQuestionAtMost;
using watchdog_detail::kSilenceQuestionFirst;
using watchdog_detail::seconds_since;

Watchdog::Scope::Scope(Scope&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

Watchdog::Scope::~Scope() {
  if (owner_) owner_->unwatch(id_);
}

Watchdog::Watchdog(MPI_Comm comm, double timeout_s, Start start) : timeout_s_(timeout_s) {
  DDPT_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
  hosts_ = all_gather_strings(comm_.get(), process_host());
  if (size_ > 1 || start == Start::kAlways) thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  // An answer whose asker gave up before receiving it stays with MPI, its buffer too: kept for
  // the rest of the process (a few bytes), since MPI may still read it.
  forget_sent_answers();
  for (PendingAnswer& answer : answers_in_flight_) MPI_Request_free(&answer.request);
  if (!answers_in_flight_.empty()) {
    (void)new std::list<PendingAnswer>(std::move(answers_in_flight_));  // NOLINT: kept on purpose
  }
}

Watchdog::Scope Watchdog::watch(std::string what) {
  return add_entry(std::move(what), /*phase=*/false);
}

Watchdog::Scope Watchdog::watch(std::string what, FlightTag tag, Deadline deadline) {
  Scope scope = add_entry(std::move(what), /*phase=*/false, deadline);
  if (!flight_ || scope.owner_ == nullptr) return scope;
  const uint64_t flight = flight_->queued(tag.stream, std::move(tag.operation), tag.bytes,
                                          std::move(tag.dtype), std::move(tag.backend));
  flight_->started(flight);
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& entry : entries_) {
    if (entry.id == scope.id_) entry.flight = flight;
  }
  return scope;
}

Watchdog::Scope Watchdog::phase(std::string what) {
  return add_entry(std::move(what), /*phase=*/true);
}

Watchdog::Scope Watchdog::add_entry(std::string what, bool phase, Deadline deadline) {
  if (!thread_.joinable()) return {};  // nothing watches
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  const bool paced = !phase && deadline == Deadline::kHangRule && !in_phase();
  entries_.push_back(
      {id, std::move(what), step_.load(std::memory_order_relaxed), Clock::now(), {}, phase, paced});
  return {this, id};
}

void Watchdog::watch_until(std::string what, std::function<bool()> done) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const bool paced = !in_phase();
  entries_.push_back({next_id_++, std::move(what), step_.load(std::memory_order_relaxed),
                      Clock::now(), std::move(done), false, paced});
}

void Watchdog::set_hang_rule(double factor, double floor_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  hang_factor_ = factor;
  hang_floor_s_ = floor_s;
}

void Watchdog::step_took(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (++steps_seen_ <= kWarmupSteps) return;
  const auto past_warmup = static_cast<size_t>(steps_seen_ - kWarmupSteps - 1);
  if (recent_steps_.size() < kRecentSteps) {
    recent_steps_.push_back(seconds);
  } else {
    recent_steps_[past_warmup % kRecentSteps] = seconds;
  }
}

void Watchdog::record_flights(int64_t capacity) {
  flight_ = capacity > 0 ? std::make_unique<FlightRecorder>(capacity) : nullptr;
}

void Watchdog::set_flight_output(std::function<void(const RankFlight&)> write,
                                 std::function<std::string()> explain) {
  std::lock_guard<std::mutex> lock(mutex_);
  write_flight_ = std::move(write);
  explain_flights_ = std::move(explain);
}

bool Watchdog::in_phase() const {
  return std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.phase; });
}

double Watchdog::paced_deadline() const {
  if (hang_factor_ <= 0 || recent_steps_.empty()) return timeout_s_;
  const double slowest = *std::max_element(recent_steps_.begin(), recent_steps_.end());
  return std::min(timeout_s_, std::max(hang_floor_s_, hang_factor_ * slowest));
}

double Watchdog::deadline_of(const Entry& entry) const {
  return entry.paced ? paced_deadline() : timeout_s_;
}

Watchdog::Scope Watchdog::watch_for_failure(std::string what,
                                            std::function<std::string()> failure) {
  if (!thread_.joinable()) return {};  // nothing watches
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  failure_checks_.push_back({id, std::move(what), std::move(failure)});
  return {this, id};
}

void Watchdog::unwatch(uint64_t id) {
  // Under the lock that first_failure() holds while it asks: once this returns, the check is not
  // running and never runs again, so its owner may go.
  std::lock_guard<std::mutex> lock(mutex_);
  // Not remove_if: the entries it leaves past its end are moved-from, their flight handles lost
  // whenever a younger entry (another thread's) is moved over the ended one.
  const auto ended =
      std::find_if(entries_.begin(), entries_.end(), [id](const Entry& e) { return e.id == id; });
  if (ended != entries_.end()) {
    if (ended->flight != 0 && flight_) flight_->completed(ended->flight);
    entries_.erase(ended);
  }
  failure_checks_.erase(std::remove_if(failure_checks_.begin(), failure_checks_.end(),
                                       [id](const FailureCheck& c) { return c.id == id; }),
                        failure_checks_.end());
}

void Watchdog::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, kPollInterval, [this] { return stopping_; })) return;
    }
    answer_queries();
    forget_sent_answers();
    if (const auto failed = first_failure()) on_failure(failed->first, failed->second);
    if (const std::optional<Entry> expired = first_expired()) {
      if (!expired->paced) silent_.clear();  // wait for every rank's answer
      // Asking takes time: the collective may have completed meanwhile.
      if (!expired->paced || (confirmed_hang(*expired) && still_watched(expired->id))) {
        on_timeout(*expired);
      }
    }
    if (const std::optional<Entry> waiting = first_past_floor()) {
      const std::vector<int> silent = silent_ranks();
      if (!silent.empty() && still_watched(waiting->id)) on_timeout(*waiting, silent);
    }
  }
}

std::optional<Watchdog::Entry> Watchdog::first_past_floor() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hang_factor_ <= 0 || hang_floor_s_ >= timeout_s_) return std::nullopt;
  const Entry* oldest_phase = nullptr;
  const Entry* oldest_collective = nullptr;
  bool past_floor = false;
  for (const Entry& entry : entries_) {
    if (entry.done && entry.done()) continue;
    past_floor = past_floor || seconds_since(entry.since) > hang_floor_s_;
    const Entry*& oldest = entry.phase ? oldest_phase : oldest_collective;
    if (oldest == nullptr) oldest = &entry;
  }
  if (!past_floor) {
    silence_interval_ = kSilenceQuestionFirst;  // nothing waits: the next wait starts afresh
    return std::nullopt;
  }
  if (Clock::now() - silence_asked_ < silence_interval_) return std::nullopt;
  // The collective this rank waits in names the hang best, however young it is (a phase past
  // the floor may have reached its collective a moment ago); a phase, where the rank waits in
  // collectives the watchdog cannot see (parallel HDF5's), when it waits in none.
  return oldest_collective != nullptr ? *oldest_collective : *oldest_phase;
}

bool Watchdog::still_watched(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(entries_.begin(), entries_.end(),
                     [id](const Entry& e) { return e.id == id && !(e.done && e.done()); });
}

void Watchdog::write_flight() {
  if (!flight_ || flight_written_.exchange(true)) return;
  std::function<void(const RankFlight&)> write;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    write = write_flight_;
  }
  if (!write) return;
  RankFlight flight;
  flight.rank = rank_;
  flight.host = hosts_[static_cast<size_t>(rank_)];
  flight.step = step_.load(std::memory_order_relaxed);
  flight.written_s = FlightRecorder::now_s();
  flight.records = flight_->records();
  try {
    write(flight);
  } catch (const std::exception& e) {
    write_stderr_line(fmt::format("{} ddptrain: warning: flight records not written: {}",
                                  process_tag(), e.what()));
  }
}

std::optional<Watchdog::Entry> Watchdog::first_expired() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Asynchronous work that has completed is done with.
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) { return e.done && e.done(); }),
                 entries_.end());
  const bool asked_lately = Clock::now() - hang_asked_ < kAskAgain;
  for (const Entry& entry : entries_) {
    const double seconds = seconds_since(entry.since);
    if (entry.paced && asked_lately && seconds <= timeout_s_) continue;
    if (seconds > deadline_of(entry)) return entry;
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> Watchdog::first_failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const FailureCheck& check : failure_checks_) {
    std::string failure = check.failure();
    if (!failure.empty()) return std::make_pair(check.what, std::move(failure));
  }
  return std::nullopt;
}

// First line "EXPIRED STEP REPORTING", then one line per watched entry:
// "SECONDS<TAB>KIND<TAB>WHAT", KIND p for a phase, c for a collective.
void Watchdog::on_timeout(const Entry& entry, const std::vector<int>& silent) {
  hang_found_ = true;
  write_flight();
  const std::vector<std::optional<Answer>> answers = ask_every_rank(Query::kWhereAndWriteFlight);
  // One full report, from the lowest timed-out rank that others heard from; the rest say one
  // line, and abort anyway if that rank's abort does not reach them.
  int reporter = rank_;
  for (int r = 0; r < rank_; ++r) {
    if (answers[static_cast<size_t>(r)] && answers[static_cast<size_t>(r)]->expired) {
      reporter = r;
      break;
    }
  }
  if (reporter == rank_) {
    std::string text = report(entry, silent, answers);
    answer_queries();  // before the analysis, which may take seconds: others are asking
    std::function<std::string()> explain;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      explain = explain_flights_;
    }
    if (explain) {
      try {
        text += "\n" + explain();
      } catch (const std::exception& e) {
        text += fmt::format("\nflight records not analysed: {}", e.what());
      }
    }
    write_stderr_line(text);
    log_to_file_only(text);  // run.dir/log.txt, where rank 0 keeps it
  } else {
    write_stderr_line(fmt::format("{} ddptrain: error: '{}' at step {} {}; rank {} reports",
                                  process_tag(), entry.what, entry.step,
                                  deadline_text(entry, silent), reporter));
    // Still answering, so that no rank takes this one for stopped while the reporter works.
    const Clock::time_point since = Clock::now();
    while (Clock::now() - since < kReporterGrace) {
      answer_queries();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  abort_job();
}

void Watchdog::on_failure(const std::string& what, const std::string& failure) {
  const std::string text =
      fmt::format("{} ddptrain: error: {} failed at step {}: {}; aborting the job (exit code 5)",
                  process_tag(), what, step_.load(std::memory_order_relaxed), failure);
  write_stderr_line(text);
  log_to_file_only(text);  // rank 0's run.dir/log.txt, when this is rank 0
  abort_job();
}

std::string Watchdog::deadline_text(const Entry& entry, const std::vector<int>& silent) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!silent.empty()) {
    const auto phase =
        std::find_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.phase; });
    const std::string inside = !entry.phase && phase != entries_.end()
                                   ? fmt::format(" inside '{}'", phase->what)
                                   : std::string();
    return fmt::format(
        "had waited {:.1f} s{}, and rank(s) {} gave no answer, twice running (the hang rule: "
        "past dist.hang_floor_s = {:g} s, a rank that does not answer is stopped, killed or hung "
        "outside ddptrain; one that answers it is reading, writing or evaluating gets up to "
        "dist.timeout_s = {:g} s)",
        seconds_since(entry.since), inside, fmt::join(silent, ", "), hang_floor_s_, timeout_s_);
  }
  const double deadline = deadline_of(entry);
  if (!entry.paced || deadline >= timeout_s_) {
    return fmt::format("did not complete within dist.timeout_s = {:g} s", timeout_s_);
  }
  const double slowest = *std::max_element(recent_steps_.begin(), recent_steps_.end());
  return fmt::format(
      "did not complete within {:.1f} s (dist.hang_factor = {:g} x the slowest recent step, "
      "{:.3f} s; at least dist.hang_floor_s = {:g} s)",
      deadline, hang_factor_, slowest, hang_floor_s_);
}

std::string Watchdog::report(const Entry& entry, const std::vector<int>& silent,
                             const std::vector<std::optional<Answer>>& answers) {
  const bool hung = !silent.empty() || (entry.paced && seconds_since(entry.since) <= timeout_s_);
  std::string text = fmt::format("{} ddptrain: error: collective {}: '{}' at step {} {}",
                                 process_tag(), hung ? "hung" : "timed out", entry.what, entry.step,
                                 deadline_text(entry, silent));
  std::vector<int> waiting{rank_};
  std::string missing;
  std::vector<int> missing_ranks;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const std::optional<Answer>& answer = answers[static_cast<size_t>(r)];
    const std::string who = fmt::format("rank {} ({})", r, hosts_[static_cast<size_t>(r)]);
    if (!answer) {
      missing_ranks.push_back(r);
      missing +=
          fmt::format("\n  {}: no answer within {} s: stopped, killed, or hung outside ddptrain",
                      who, std::chrono::duration_cast<std::chrono::seconds>(kAnswerGrace).count());
      continue;
    }
    const bool arrived = std::any_of(answer->phases.begin(), answer->phases.end(),
                                     [&](const auto& phase) { return phase.second == entry.what; });
    if (arrived) {
      waiting.push_back(r);
      continue;
    }
    missing_ranks.push_back(r);
    if (answer->phases.empty()) {
      missing += fmt::format("\n  {}: at step {}, computing (in no collective)", who, answer->step);
    }
    for (const auto& [seconds, what] : answer->phases) {
      missing +=
          fmt::format("\n  {}: at step {}, in '{}' for {:.0f} s", who, answer->step, what, seconds);
    }
  }
  std::sort(waiting.begin(), waiting.end());
  if (missing_ranks.empty()) {
    text +=
        "\nranks that did not arrive: none: every rank is waiting in it (check the network "
        "and the MPI/NCCL settings)";
  } else {
    text +=
        fmt::format("\nranks that did not arrive: {}{}", fmt::join(missing_ranks, ", "), missing);
  }
  text += fmt::format("\nranks waiting in it: {}", fmt::join(waiting, ", "));
  text += "\naborting the job (exit code 5)";
  return text;
}

}  // namespace ddpt
