// The stop vote: every rank learns the same decision, whichever rank got the signal.
#include <gtest/gtest.h>
#include <mpi.h>

#include <csignal>

#include "comm/stop_vote.hpp"

namespace ddpt {
namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

TEST(StopVote, NobodyAsksNobodyStops) {
  StopVote vote(MPI_COMM_WORLD, nullptr);
  EXPECT_EQ(vote.agree(0), 0);
}

TEST(StopVote, OneRanksSignalStopsEveryRank) {
  StopVote vote(MPI_COMM_WORLD, nullptr);
  const int last = world_size() - 1;
  EXPECT_EQ(vote.agree(world_rank() == last ? SIGUSR1 : 0), SIGUSR1);
  EXPECT_EQ(vote.agree(0), 0);  // a vote is about this step only
}

TEST(StopVote, WatchedVoteCompletes) {
  Watchdog watchdog(MPI_COMM_WORLD, 60);
  StopVote vote(MPI_COMM_WORLD, &watchdog);
  for (int step = 1; step <= 50; ++step) {
    watchdog.set_step(step);
    ASSERT_EQ(vote.agree(step == 50 && world_rank() == 0 ? SIGTERM : 0), step == 50 ? SIGTERM : 0);
  }
}

}  // namespace
}  // namespace ddpt
