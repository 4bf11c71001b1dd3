// CommThread: jobs run one at a time in submission order, errors reach the future, and the
// background kind (MpiComm's helper that sums node-shared buckets) runs at the lowest priority, so
// it takes only cycles its rank's compute leaves over (comm/node_all_reduce.hpp).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <stdexcept>
#include <vector>

#include "comm/comm_thread.hpp"

namespace ddpt {
namespace {

// The nice value of the thread that runs a job on `thread`.
int nice_of_jobs(CommThread& thread) {
  int nice = 0;
  thread
      .submit([&nice] {
        errno = 0;
        nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
        if (errno != 0) throw std::runtime_error("getpriority failed");
      })
      .get();
  return nice;
}

TEST(CommThread, BackgroundThreadRunsAtTheLowestPriority) {
  errno = 0;
  const int process = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  CommThread normal;
  CommThread background(CommThread::Priority::kBackground);
  EXPECT_EQ(nice_of_jobs(normal), process) << "the MPI thread keeps the process's priority";
  EXPECT_EQ(nice_of_jobs(background), 19);
}

TEST(CommThread, RunsJobsInOrderAndCarriesTheirErrors) {
  CommThread thread(CommThread::Priority::kBackground);
  std::vector<int> order;
  std::vector<std::future<void>> done;
  for (int i = 0; i < 5; ++i) done.push_back(thread.submit([&order, i] { order.push_back(i); }));
  std::future<void> failed = thread.submit([] { throw std::runtime_error("job failed"); });
  for (auto& job : done) job.get();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_THROW(failed.get(), std::runtime_error);
}

}  // namespace
}  // namespace ddpt
