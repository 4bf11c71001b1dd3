// A thread that runs jobs one at a time, in submission order. MpiComm drives every MPI call
// through it, so collectives keep the same order on every rank and overlap the caller's compute,
// and helps sum node-shared buffers on a second one, at the lowest priority (kBackground).
#pragma once

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
  enum class Priority {
    kNormal,
    // nice 19: the thread runs on cycles the process's other threads leave over (a core they do
    // not use, or while they wait), and takes only about 1.5% of a core they keep busy.
    kBackground,
  };
  explicit CommThread(Priority priority = Priority::kNormal);
  ~CommThread();  // finishes queued jobs, then joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Queues `job`; the future carries its completion or its exception.
  std::future<void> submit(std::function<void()> job);
  // Error path: drops queued jobs and waits briefly for the running one. Returns false when a
  // job is still running (a collective whose peers will never arrive): the thread is then
  // detached, so the destructor cannot hang, and the process is expected to abort.
  bool cancel();

 private:
  void loop(Priority priority);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  bool busy_ = false;
  std::condition_variable idle_;
  std::thread thread_;  // last: started after the members it uses exist
};

}  // namespace ddpt
