// The ranks' agreements on the host (comm/host_group.hpp): every rank gets the same answer, built
// from every rank's value, whether or not a watchdog watches.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "comm/host_group.hpp"

namespace ddpt {
namespace {

TEST(HostGroup, SmallestLargestAndAllAreEveryRanks) {
  HostGroup group(MPI_COMM_WORLD, nullptr);
  const int rank = group.rank();
  const int last = group.size() - 1;
  EXPECT_EQ(group.min("smallest", 10 + rank), 10);
  EXPECT_EQ(group.max("largest", 10 + rank), 10 + last);
  // Values beyond 32 bits survive (memory sizes in bytes).
  EXPECT_EQ(group.min("bytes", (int64_t{5} << 40) - rank), (int64_t{5} << 40) - last);
  EXPECT_TRUE(group.all("every rank", true));
  EXPECT_FALSE(group.all("one rank says no", rank != last));
}

TEST(HostGroup, BroadcastAndGatherCarryEveryRanksText) {
  HostGroup group(MPI_COMM_WORLD, nullptr);
  const int rank = group.rank();
  const int last = group.size() - 1;
  EXPECT_EQ(group.broadcast("from rank 0", rank == 0 ? "run.dir is fine" : ""), "run.dir is fine");
  EXPECT_EQ(group.broadcast("from the last rank", rank == last ? "last" : "x", last), "last");
  const std::vector<std::string> texts = group.all_gather("texts", std::string(rank + 1, 'a'));
  ASSERT_EQ(texts.size(), static_cast<size_t>(group.size()));
  for (int r = 0; r <= last; ++r) EXPECT_EQ(texts[static_cast<size_t>(r)], std::string(r + 1, 'a'));
  const std::vector<double> values =
      group.all_gather("values", std::vector<double>{rank * 1.5, -1.0});
  ASSERT_EQ(values.size(), 2 * static_cast<size_t>(group.size()));
  for (int r = 0; r <= last; ++r) {
    EXPECT_EQ(values[2 * static_cast<size_t>(r)], r * 1.5);
    EXPECT_EQ(values[2 * static_cast<size_t>(r) + 1], -1.0);
  }
}

// Watched agreements complete as unwatched ones do; a duplicate is a group of its own (its
// agreements may run on another thread) over the same ranks.
TEST(HostGroup, WatchedAndDuplicatedGroupsAgree) {
  Watchdog watchdog(MPI_COMM_WORLD, 60);
  HostGroup group(MPI_COMM_WORLD, &watchdog);
  HostGroup other = group.for_thread("other");
  EXPECT_EQ(other.size(), group.size());
  EXPECT_EQ(other.rank(), group.rank());
  for (int64_t i = 0; i < 50; ++i) {
    ASSERT_EQ(group.max("watched", i + group.rank()), i + group.size() - 1);
    ASSERT_EQ(other.min("duplicate", i + group.rank()), i);
  }
  group.barrier("end");
}

// A thread's group numbers its agreements in a flight stream of its own, 1, 2, ... in its order,
// however they interleave with the training thread's on each rank (one sequence for both gave
// the same number to different agreements on different ranks).
TEST(HostGroup, AThreadsAgreementsAreNumberedApart) {
  Watchdog watchdog(MPI_COMM_WORLD, 60, Watchdog::Start::kAlways);  // records at 1 rank too
  watchdog.record_flights(64);
  HostGroup group(MPI_COMM_WORLD, &watchdog);
  HostGroup writer = group.for_thread("checkpoint writer");
  std::thread thread([&] {
    for (int i = 0; i < 5; ++i) writer.barrier("writer's");
  });
  for (int i = 0; i < 7; ++i) group.max("training's", i);
  thread.join();
  std::vector<uint64_t> training, written;
  for (const FlightRecord& record : watchdog.flight()->records()) {
    ASSERT_EQ(record.state, FlightState::kCompleted)
        << record.stream << " #" << record.sequence << " " << record.operation;
    (record.stream == FlightRecorder::kTrainingStream ? training : written)
        .push_back(record.sequence);
    EXPECT_EQ(record.operation, record.stream == "checkpoint writer" ? "writer's" : "training's");
  }
  std::sort(training.begin(), training.end());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(training, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(written, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace ddpt
