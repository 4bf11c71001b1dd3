#include "comm/watchdog.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "comm/make_communicator.hpp"
#include "runtime/gather_strings.hpp"
#include "util/check.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"

namespace ddpt {
namespace {

constexpr int kQueryTag = 1;
constexpr int kAnswerTag = 2;
// How often deadlines are checked and questions answered: well under any sensible timeout, and
// rare enough to cost nothing.
constexpr auto kPollInterval = std::chrono::milliseconds(100);
// How long a timed-out rank collects answers; live ranks answer within one poll interval.
constexpr auto kAnswerGrace = std::chrono::seconds(3);
// How long a timed-out rank that is not the reporter waits for the reporter's abort.
constexpr auto kReporterGrace = std::chrono::seconds(5);

// Ends every rank with exit code 5: the device communicators first (so NCCL peers fail instead
// of hanging), then the MPI job; _Exit if MPI_Abort returns.
[[noreturn]] void abort_job() {
  abort_device_communicators();
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::kTimeout));
  std::_Exit(static_cast<int>(ExitCode::kTimeout));
}

double seconds_since(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

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
}

Watchdog::Scope Watchdog::watch(std::string what) {
  if (!thread_.joinable()) return {};  // nothing watches
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  entries_.push_back(
      {id, std::move(what), step_.load(std::memory_order_relaxed), Clock::now(), {}});
  return {this, id};
}

void Watchdog::watch_until(std::string what, std::function<bool()> done) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({next_id_++, std::move(what), step_.load(std::memory_order_relaxed),
                      Clock::now(), std::move(done)});
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
  entries_.erase(
      std::remove_if(entries_.begin(), entries_.end(), [id](const Entry& e) { return e.id == id; }),
      entries_.end());
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
    if (const auto failed = first_failure()) on_failure(failed->first, failed->second);
    if (const std::optional<Entry> expired = first_expired()) on_timeout(*expired);
  }
}

std::optional<Watchdog::Entry> Watchdog::first_expired() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Asynchronous work that has completed is done with.
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) { return e.done && e.done(); }),
                 entries_.end());
  for (const Entry& entry : entries_) {
    if (seconds_since(entry.since) > timeout_s_) return entry;
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

// First line "EXPIRED STEP", then one line per phase: "SECONDS<TAB>WHAT".
std::string Watchdog::status_text() {
  std::lock_guard<std::mutex> lock(mutex_);
  bool expired = false;
  std::string phases;
  for (const Entry& entry : entries_) {
    const double seconds = seconds_since(entry.since);
    expired = expired || seconds > timeout_s_;
    phases += fmt::format("{:.1f}\t{}\n", seconds, entry.what);
  }
  return fmt::format("{} {}\n{}", expired ? 1 : 0, step_.load(std::memory_order_relaxed), phases);
}

void Watchdog::answer_queries() {
  // Best effort throughout: this thread must never throw, and a failed send only means the asker
  // learns less about this rank.
  for (;;) {
    int pending = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm_.get(), &pending, &status) != MPI_SUCCESS ||
        !pending) {
      return;
    }
    char ignored = 0;
    MPI_Recv(&ignored, 1, MPI_CHAR, status.MPI_SOURCE, kQueryTag, comm_.get(), MPI_STATUS_IGNORE);
    const std::string text = status_text();
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, status.MPI_SOURCE, kAnswerTag,
             comm_.get());
  }
}

Watchdog::Answer Watchdog::parse_answer(int rank, const std::string& text) {
  Answer answer;
  answer.rank = rank;
  std::istringstream in(text);
  int expired = 0;
  in >> expired >> answer.step;
  answer.expired = expired != 0;
  std::string line;
  std::getline(in, line);  // rest of the first line
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    answer.phases.emplace_back(std::stod(line.substr(0, tab)), line.substr(tab + 1));
  }
  return answer;
}

std::vector<std::optional<Watchdog::Answer>> Watchdog::ask_every_rank() {
  // A stopped or dead rank never answers. (The sends are freed, not waited for: their buffer is
  // static.)
  static const char query = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request;
    if (MPI_Isend(&query, 1, MPI_CHAR, r, kQueryTag, comm_.get(), &request) == MPI_SUCCESS) {
      MPI_Request_free(&request);
    }
  }
  std::vector<std::optional<Answer>> answers(static_cast<size_t>(size_));
  int answered = 1;
  const Clock::time_point asked = Clock::now();
  while (answered < size_ && Clock::now() - asked < kAnswerGrace) {
    answer_queries();  // other timed-out ranks are asking too
    int pending = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, comm_.get(), &pending, &status) != MPI_SUCCESS ||
        !pending) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string text(static_cast<size_t>(std::max(length, 0)), '\0');
    MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, kAnswerTag, comm_.get(),
             MPI_STATUS_IGNORE);
    Answer answer = parse_answer(status.MPI_SOURCE, text);
    if (!answers[static_cast<size_t>(answer.rank)]) ++answered;
    answers[static_cast<size_t>(answer.rank)] = std::move(answer);
  }
  return answers;
}

void Watchdog::on_timeout(const Entry& entry) {
  const std::vector<std::optional<Answer>> answers = ask_every_rank();
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
    const std::string text = report(entry, answers);
    write_stderr_line(text);
    log_to_file_only(text);  // run.dir/log.txt, where rank 0 keeps it
  } else {
    write_stderr_line(fmt::format(
        "{} ddptrain: error: '{}' at step {} timed out (dist.timeout_s = {:g}); rank {} reports",
        process_tag(), entry.what, entry.step, timeout_s_, reporter));
    std::this_thread::sleep_for(kReporterGrace);
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

std::string Watchdog::report(const Entry& entry,
                             const std::vector<std::optional<Answer>>& answers) const {
  std::string text = fmt::format(
      "{} ddptrain: error: collective timed out: '{}' at step {} did not complete within "
      "dist.timeout_s = {:g} s",
      process_tag(), entry.what, entry.step, timeout_s_);
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
