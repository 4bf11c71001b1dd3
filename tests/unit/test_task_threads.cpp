// util/task_threads.hpp: every task runs once, on more than one thread at a time, and a task's
// exception reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/task_threads.hpp"

namespace ddpt {
namespace {

TEST(TaskThreads, EveryTaskRunsOnce) {
  std::vector<std::atomic<int>> runs(1000);
  run_tasks(1000, 3, [&](int64_t i) { ++runs[static_cast<size_t>(i)]; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  run_tasks(0, 3, [&](int64_t) { FAIL() << "no task to run"; });
}

// Task 0 waits for task 1 to start: only a second thread can start it.
TEST(TaskThreads, TasksRunAtTheSameTime) {
  std::atomic<bool> second_started{false};
  bool seen = false;
  run_tasks(2, 2, [&](int64_t i) {
    if (i == 1) {
      second_started = true;
      return;
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!second_started && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    seen = second_started;
  });
  EXPECT_TRUE(seen);
}

TEST(TaskThreads, TheFirstFailureIsRethrownAndStopsNewTasks) {
  // Each task takes a millisecond, against the few microseconds of a throw.
  std::atomic<int> ran{0};
  EXPECT_THROW(run_tasks(1000, 2,
                         [&](int64_t i) {
                           ++ran;
                           if (i == 10) throw std::runtime_error("task 10");
                           std::this_thread::sleep_for(std::chrono::milliseconds(1));
                         }),
               std::runtime_error);
  EXPECT_LT(ran.load(), 1000);
  EXPECT_GE(ran.load(), 11);
}

}  // namespace
}  // namespace ddpt
