#include "util/task_threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ddpt {

void run_tasks(int64_t count, int threads, const std::function<void(int64_t)>& task) {
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto work = [&] {
    for (int64_t i = next++; i < count; i = next++) {
      try {
        task(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;  // no new task anywhere
      }
    }
  };
  const int64_t helpers = std::clamp<int64_t>(std::min<int64_t>(threads, count) - 1, 0, count);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(helpers));
  for (int64_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace ddpt
