#include "comm/work_counter.hpp"

#include <spdlog/spdlog.h>

#include <exception>

#include "util/check.hpp"

namespace ddpt {
namespace {

constexpr int kCounterQuestionTag = 1;
constexpr int kCounterAnswerTag = 2;
constexpr int64_t kCounterTakeQuestion = 0;
constexpr int64_t kCounterStopQuestion = 1;

}  // namespace

WorkCounter::WorkCounter(MPI_Comm comm, int64_t count, Watchdog* watchdog)
    : watchdog_(watchdog), count_(count) {
  DDPT_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
  if (size_ == 1) return;
  if (rank_ == 0) {
    server_ = std::thread([this] { serve(); });
  } else {
    ask(false);
  }
}

WorkCounter::~WorkCounter() {
  if (!server_.joinable()) return;
  if (std::uncaught_exceptions() > 0) quit_ = true;
  server_.join();
}

int64_t WorkCounter::take(bool stop) {
  if (closed_) return kStopped;
  if (next_ == count_) return kNone;
  if (stop) {
    closed_ = true;
    return kStopped;
  }
  return next_++;
}

int64_t WorkCounter::handed_out() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return next_;
}

void WorkCounter::ask(bool stop) {
  question_ = stop ? kCounterStopQuestion : kCounterTakeQuestion;
  DDPT_CHECK_MPI(
      MPI_Irecv(&answer_, 1, MPI_INT64_T, 0, kCounterAnswerTag, comm_.get(), &answer_request_));
  DDPT_CHECK_MPI(MPI_Isend(&question_, 1, MPI_INT64_T, 0, kCounterQuestionTag, comm_.get(),
                           &question_request_));
}

int64_t WorkCounter::next(bool stop) {
  if (rank_ == 0) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return take(stop);
  }
  if (answer_request_ == MPI_REQUEST_NULL) return kNone;  // the last answer came before
  {
    const Watchdog::Scope waiting = watch_phase(watchdog_, "the next batch from rank 0");
    DDPT_CHECK_MPI(MPI_Wait(&question_request_, MPI_STATUS_IGNORE));
    DDPT_CHECK_MPI(MPI_Wait(&answer_request_, MPI_STATUS_IGNORE));
  }
  const int64_t answer = answer_;
  if (answer >= 0) ask(stop);
  return answer;
}

void WorkCounter::serve() {
  try {
    int told = 0;  // ranks that had their last answer
    while (told < size_ - 1) {
      int64_t question = 0;
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Status status;
      DDPT_CHECK_MPI(MPI_Irecv(&question, 1, MPI_INT64_T, MPI_ANY_SOURCE, kCounterQuestionTag,
                               comm_.get(), &request));
      int arrived = 0;
      while (true) {
        DDPT_CHECK_MPI(MPI_Test(&request, &arrived, &status));
        if (arrived) break;
        if (quit_) {
          MPI_Cancel(&request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
          return;
        }
        std::this_thread::sleep_for(kPoll);
      }
      int64_t answer = 0;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        answer = take(question == kCounterStopQuestion);
      }
      DDPT_CHECK_MPI(
          MPI_Send(&answer, 1, MPI_INT64_T, status.MPI_SOURCE, kCounterAnswerTag, comm_.get()));
      if (answer < 0) ++told;
    }
  } catch (const std::exception& e) {
    // The ranks waiting for an answer are ended by the watchdog (their wait is a phase).
    spdlog::error("the batch counter's thread on rank 0 stopped: {}", e.what());
  }
}

}  // namespace ddpt
