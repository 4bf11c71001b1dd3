#include "comm/comm_thread.hpp"

#include <sys/resource.h>
#include <unistd.h>

namespace ddpt {
namespace {
// How long the error path waits for a running collective before giving up on it.
constexpr auto kCancelGrace = std::chrono::seconds(1);
}  // namespace

CommThread::CommThread(Priority priority) : thread_([this, priority] { loop(priority); }) {}

CommThread::~CommThread() {
  if (!thread_.joinable()) return;  // detached by cancel()
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::future<void> CommThread::submit(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::future<void> done = task.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(task));
  }
  wake_.notify_one();
  return done;
}

bool CommThread::cancel() {
  std::unique_lock<std::mutex> lock(mutex_);
  jobs_.clear();  // their futures report broken_promise
  if (idle_.wait_for(lock, kCancelGrace, [this] { return !busy_; })) return true;
  thread_.detach();
  return false;
}

void CommThread::loop(Priority priority) {
  // Linux gives each thread its own nice value. Lowering it needs no privilege; a refusal (a
  // restricted container) only leaves the thread at normal priority.
  if (priority == Priority::kBackground) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  }
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      task = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
    }
    task();  // exceptions land in the task's future
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace ddpt
