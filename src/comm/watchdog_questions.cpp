// The questions the ranks' watchdogs ask each other: where each rank is (its step, what it waits
// in, whether it is reporting a hang), who gives no answer, and the answers to others' questions.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "comm/watchdog.hpp"
#include "comm/watchdog_questions.hpp"

namespace ddpt {

using watchdog_detail::kAnswerGrace;
using watchdog_detail::kAnswerTag;
using watchdog_detail::kAskAgain;
using watchdog_detail::kQueryTag;
using watchdog_detail::kSilenceQuestionAtMost;
using watchdog_detail::seconds_since;

std::vector<int> Watchdog::silent_ranks() {
  std::vector<int> silent;
  // Twice, each time waiting the whole grace for every rank: a rank that misses one answer
  // (a starved core) is not called stopped for it.
  for (int question = 0; question < 2; ++question) {
    silent_.clear();
    const std::vector<std::optional<Answer>> answers = ask_every_rank(Query::kWhere);
    // A rank already reporting a hang answers late (it is asking, writing its analysis, or
    // waiting for its abort): its report and abort end this rank too.
    if (std::any_of(answers.begin(), answers.end(),
                    [](const auto& a) { return a && a->reporting; }))
      return {};
    std::vector<int> unanswered;
    for (int r = 0; r < size_; ++r) {
      const bool counted = question == 0 || std::count(silent.begin(), silent.end(), r) > 0;
      if (r != rank_ && !answers[static_cast<size_t>(r)] && counted) unanswered.push_back(r);
    }
    silent = std::move(unanswered);
    if (silent.empty()) break;
  }
  // The report's question does not wait for them again.
  silent_.assign(static_cast<size_t>(size_), false);
  for (const int r : silent) silent_[static_cast<size_t>(r)] = true;
  std::lock_guard<std::mutex> lock(mutex_);
  silence_asked_ = Clock::now();
  if (silent.empty())
    silence_interval_ = std::min<Clock::duration>(2 * silence_interval_, kSilenceQuestionAtMost);
  return silent;
}

bool Watchdog::confirmed_hang(const Entry& entry) {
  if (seconds_since(entry.since) > timeout_s_) return true;  // the ceiling, whatever others do
  const std::vector<std::optional<Answer>> answers = ask_every_rank(Query::kWhere);
  silent_.assign(static_cast<size_t>(size_), false);
  for (int r = 0; r < size_; ++r)
    silent_[static_cast<size_t>(r)] = r != rank_ && !answers[static_cast<size_t>(r)];
  const bool excused = std::any_of(answers.begin(), answers.end(),
                                   [](const auto& answer) { return answer && answer->in_phase; });
  const Clock::time_point now = Clock::now();
  // A rank that was in a phase a moment ago may be on its way to the collective now.
  const bool lately_excused = now - last_excuse_ < 2 * kAskAgain;
  if (!excused && !lately_excused) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  hang_asked_ = now;
  if (excused) last_excuse_ = now;
  return false;
}

std::string Watchdog::status_text() {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool reporting = hang_found_.load();
  bool expired = reporting;
  std::string phases;
  for (const Entry& entry : entries_) {
    const double seconds = seconds_since(entry.since);
    expired = expired || seconds > deadline_of(entry);
    phases += fmt::format("{:.1f}\t{}\t{}\n", seconds, entry.phase ? 'p' : 'c', entry.what);
  }
  return fmt::format("{} {} {}\n{}", expired ? 1 : 0, step_.load(std::memory_order_relaxed),
                     reporting ? 1 : 0, phases);
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
    char query = 0;
    MPI_Recv(&query, 1, MPI_CHAR, status.MPI_SOURCE, kQueryTag, comm_.get(), MPI_STATUS_IGNORE);
    // Written before answering: the asker reads the flight files once the answers are in.
    if (query == static_cast<char>(Query::kWhereAndWriteFlight)) write_flight();
    // Sent without waiting: an answer past MPI's eager size to an asker stopped since it asked
    // would otherwise hold this thread, and this rank would stop answering anyone.
    answers_in_flight_.push_back({status_text(), MPI_REQUEST_NULL});
    PendingAnswer& answer = answers_in_flight_.back();
    MPI_Isend(answer.text.data(), static_cast<int>(answer.text.size()), MPI_CHAR, status.MPI_SOURCE,
              kAnswerTag, comm_.get(), &answer.request);
  }
}

void Watchdog::forget_sent_answers() {
  for (auto a = answers_in_flight_.begin(); a != answers_in_flight_.end();) {
    int done = 0;
    if (a->request == MPI_REQUEST_NULL ||
        (MPI_Test(&a->request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done)) {
      a = answers_in_flight_.erase(a);
    } else {
      ++a;
    }
  }
}

Watchdog::Answer Watchdog::parse_answer(int rank, const std::string& text) {
  Answer answer;
  answer.rank = rank;
  std::istringstream in(text);
  int expired = 0;
  int reporting = 0;
  in >> expired >> answer.step >> reporting;
  answer.expired = expired != 0;
  answer.reporting = reporting != 0;
  std::string line;
  std::getline(in, line);  // rest of the first line
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos || tab + 3 > line.size()) continue;
    const double seconds = std::stod(line.substr(0, tab));
    answer.in_phase = answer.in_phase || line[tab + 1] == 'p';
    answer.phases.emplace_back(seconds, line.substr(tab + 3));
  }
  return answer;
}

std::vector<std::optional<Watchdog::Answer>> Watchdog::ask_every_rank(Query query) {
  // A stopped or dead rank never answers. (The sends are freed, not waited for: their buffers
  // are static.)
  static const char kQueries[] = {static_cast<char>(Query::kWhere),
                                  static_cast<char>(Query::kWhereAndWriteFlight)};
  const char* sent = &kQueries[query == Query::kWhere ? 0 : 1];
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request;
    if (MPI_Isend(sent, 1, MPI_CHAR, r, kQueryTag, comm_.get(), &request) == MPI_SUCCESS) {
      MPI_Request_free(&request);
    }
  }
  std::vector<std::optional<Answer>> answers(static_cast<size_t>(size_));
  int answered = 1;
  // Ranks silent when last asked are not waited for again (they may still answer).
  const auto expected = static_cast<int>(size_ - std::count(silent_.begin(), silent_.end(), true));
  const Clock::time_point asked = Clock::now();
  while (answered < expected && Clock::now() - asked < kAnswerGrace) {
    answer_queries();  // other timed-out ranks are asking too
    if (!receive_answer(answers, answered))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // What arrived meanwhile counts: this thread may itself have been off the CPU for the grace
  // (a starved core), and its peers' answers then wait in its queue.
  while (answered < expected && receive_answer(answers, answered)) {
  }
  return answers;
}

bool Watchdog::receive_answer(std::vector<std::optional<Answer>>& answers, int& answered) {
  int pending = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, comm_.get(), &pending, &status) != MPI_SUCCESS ||
      !pending) {
    return false;
  }
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string text(static_cast<size_t>(std::max(length, 0)), '\0');
  MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, kAnswerTag, comm_.get(),
           MPI_STATUS_IGNORE);
  Answer answer = parse_answer(status.MPI_SOURCE, text);
  if (!answers[static_cast<size_t>(answer.rank)]) ++answered;
  answers[static_cast<size_t>(answer.rank)] = std::move(answer);
  return true;
}

}  // namespace ddpt
