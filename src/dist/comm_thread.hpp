// A thread that runs jobs one at a time, in submission order. MpiComm drives every MPI call
// through it, so collectives keep the same order on every rank and overlap the caller's compute.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace ddpt {

class CommThread {
 public:
  CommThread();
  ~CommThread();  // finishes queued jobs, then joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Queues `job`; the future carries its completion or its exception.
  std::future<void> submit(std::function<void()> job);
  // Error path: queued jobs are dropped and a running job that polls cancelled() gives up, so
  // the destructor cannot hang on a collective whose peers will never arrive.
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  std::atomic<bool> cancelled_{false};
  std::thread thread_;  // last: started after the members it uses exist
};

}  // namespace ddpt
