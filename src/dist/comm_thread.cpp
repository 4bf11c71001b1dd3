#include "dist/comm_thread.hpp"

namespace ddpt {

CommThread::CommThread() : thread_([this] { loop(); }) {}

CommThread::~CommThread() {
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

void CommThread::cancel() {
  cancelled_ = true;
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.clear();  // their futures report broken_promise
}

void CommThread::loop() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      task = std::move(jobs_.front());
      jobs_.pop_front();
    }
    task();  // exceptions land in the task's future
  }
}

}  // namespace ddpt
