// The flight recorder's ring, the analysis of the ranks' records (the first collective where they
// part, who never reached it, who left no file), and the flight file's round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "comm/flight_analysis.hpp"
#include "comm/flight_recorder.hpp"
#include "io/flight_file.hpp"

namespace ddpt {
namespace {

// `count` all-reduces of 4000 B, completed, then `open` more started and not completed.
RankFlight flight_of(int rank, int completed, int open = 0, int64_t bytes = 4000) {
  FlightRecorder recorder(256);
  for (int i = 0; i < completed + open; ++i) {
    const uint64_t s = recorder.queued("all_reduce", bytes, "Float", "MPI");
    recorder.started(s);
    if (i < completed) recorder.completed(s);
  }
  RankFlight flight;
  flight.rank = rank;
  flight.host = "node" + std::to_string(rank);
  flight.step = 7;
  flight.written_s = FlightRecorder::now_s();
  flight.records = recorder.records();
  return flight;
}

TEST(FlightRecorder, KeepsTheLastRecordsOldestFirst) {
  FlightRecorder recorder(3);
  for (int i = 0; i < 5; ++i) recorder.queued("all_reduce", 8, "Float", "MPI");
  recorder.started(4);
  recorder.completed(5);
  recorder.completed(1);  // overwritten long ago: nothing to update
  const std::vector<FlightRecord> kept = recorder.records();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].sequence, 3u);
  EXPECT_EQ(kept[2].sequence, 5u);
  EXPECT_EQ(kept[0].state, FlightState::kQueued);
  EXPECT_EQ(kept[1].state, FlightState::kStarted);
  EXPECT_GT(kept[1].started_s, 0);
  EXPECT_EQ(kept[2].state, FlightState::kCompleted);
  EXPECT_GE(kept[2].ended_s, kept[2].queued_s);
}

TEST(FlightRecorder, NoneKeptWithCapacityZero) {
  FlightRecorder recorder(0);
  EXPECT_FALSE(recorder.enabled());
  EXPECT_EQ(recorder.queued("all_reduce", 8, "Float", "MPI"), 0u);
  EXPECT_TRUE(recorder.records().empty());
}

TEST(FlightAnalysis, NamesTheCollectiveWhereOneRankIsMissing) {
  // Ranks 0 and 2 wait in #6; rank 1 left no file (stopped).
  const FlightAnalysis a = analyse_flights({flight_of(2, 5, 1), flight_of(0, 5, 1)}, 3);
  EXPECT_EQ(a.sequence, 6u);
  EXPECT_FALSE(a.different_collectives);
  EXPECT_EQ(a.without_records, std::vector<int>{1});
  EXPECT_TRUE(a.never_reached.empty());
  EXPECT_NE(a.text.find("no file from rank(s) 1"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("rank 0 (node0, step 7): #6 all_reduce of 4000 B Float (MPI): started"),
            std::string::npos)
      << a.text;
}

TEST(FlightAnalysis, NamesTheRankThatNeverReachedIt) {
  // Rank 1 completed #1-#5 and never queued #6, where ranks 0 and 2 wait.
  const FlightAnalysis a =
      analyse_flights({flight_of(0, 5, 1), flight_of(1, 5), flight_of(2, 5, 1)}, 3);
  EXPECT_EQ(a.sequence, 6u);
  EXPECT_EQ(a.never_reached, std::vector<int>{1});
  EXPECT_TRUE(a.without_records.empty());
  EXPECT_NE(a.text.find("rank 1 (node1, step 7): never reached #6; its latest: #5"),
            std::string::npos)
      << a.text;
}

TEST(FlightAnalysis, NamesBothCollectivesWhereTheRanksDiffer) {
  RankFlight skipped = flight_of(1, 5, 1);
  skipped.records.back().bytes = 1000;  // the next bucket's all-reduce under the same number
  const FlightAnalysis a = analyse_flights({flight_of(0, 5, 1), skipped}, 2);
  EXPECT_EQ(a.sequence, 6u);
  EXPECT_TRUE(a.different_collectives);
  EXPECT_NE(a.text.find("#6 all_reduce of 4000 B"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("#6 all_reduce of 1000 B"), std::string::npos) << a.text;
}

TEST(FlightAnalysis, NothingPartsWhereEveryCollectiveCompleted) {
  const FlightAnalysis a = analyse_flights({flight_of(0, 4), flight_of(1, 4)}, 2);
  EXPECT_EQ(a.sequence, 0u);
  EXPECT_NE(a.text.find("every rank completed collectives #1 to #4 alike"), std::string::npos)
      << a.text;
}

TEST(FlightFile, ReadsBackWhatWasWritten) {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("ddptrain_flight_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  EXPECT_FALSE(is_flight_directory(directory));
  const RankFlight written = flight_of(1, 3, 1);
  write_flight_file(directory, written, 4);
  write_flight_file(directory, flight_of(0, 0), 4);  // no records at all
  EXPECT_TRUE(is_flight_directory(directory));
  int world_size = 0;
  const std::vector<RankFlight> read = read_flight_directory(directory, world_size);
  EXPECT_EQ(world_size, 4);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_TRUE(read[0].records.empty());
  const RankFlight& back = read[1];
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.host, "node1");
  EXPECT_EQ(back.step, 7);
  EXPECT_EQ(back.written_s, written.written_s);
  ASSERT_EQ(back.records.size(), written.records.size());
  for (size_t i = 0; i < back.records.size(); ++i) {
    const FlightRecord& a = back.records[i];
    const FlightRecord& b = written.records[i];
    EXPECT_EQ(a.sequence, b.sequence);
    EXPECT_EQ(a.operation, b.operation);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.backend, b.backend);
    EXPECT_EQ(a.queued_s, b.queued_s);
    EXPECT_EQ(a.started_s, b.started_s);
    EXPECT_EQ(a.ended_s, b.ended_s);
    EXPECT_EQ(a.state, b.state);
  }
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace ddpt
