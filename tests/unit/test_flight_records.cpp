// The flight recorder's rings, the analysis of the ranks' records (in each stream, the first
// collective where they part, who never reached it, who left no file), one job's files among
// others', and the flight file's round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "comm/flight_analysis.hpp"
#include "comm/flight_recorder.hpp"
#include "h5/h5_file.hpp"
#include "io/flight_file.hpp"

namespace ddpt {
namespace {

constexpr const char* kTraining = FlightRecorder::kTrainingStream;

RankFlight flight_from(int rank, const FlightRecorder& recorder) {
  RankFlight flight;
  flight.rank = rank;
  flight.host = "node" + std::to_string(rank);
  flight.job = "job A";
  flight.world_size = 3;
  flight.step = 7;
  flight.written_s = FlightRecorder::now_s();
  flight.records = recorder.records();
  return flight;
}

// `count` all-reduces of 4000 B, completed, then `open` more started and not completed.
RankFlight flight_of(int rank, int completed, int open = 0, int64_t bytes = 4000) {
  FlightRecorder recorder(256);
  for (int i = 0; i < completed + open; ++i) {
    const uint64_t s = recorder.queued(kTraining, "all_reduce", bytes, "Float", "MPI");
    recorder.started(s);
    if (i < completed) recorder.completed(s);
  }
  return flight_from(rank, recorder);
}

TEST(FlightRecorder, KeepsTheLastRecordsOldestFirst) {
  FlightRecorder recorder(3);
  std::vector<uint64_t> handles;
  for (int i = 0; i < 5; ++i)
    handles.push_back(recorder.queued(kTraining, "all_reduce", 8, "Float", "MPI"));
  recorder.started(handles[3]);
  recorder.completed(handles[4]);
  recorder.completed(handles[0]);  // overwritten long ago: nothing to update
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
  EXPECT_EQ(recorder.queued(kTraining, "all_reduce", 8, "Float", "MPI"), 0u);
  EXPECT_TRUE(recorder.records().empty());
}

TEST(FlightAnalysis, NamesTheCollectiveWhereOneRankIsMissing) {
  // Ranks 0 and 2 wait in #6; rank 1 left no file (stopped).
  const FlightAnalysis a = analyse_flights({flight_of(2, 5, 1), flight_of(0, 5, 1)}, 3);
  ASSERT_EQ(a.partings.size(), 1u);
  EXPECT_EQ(a.partings[0].sequence, 6u);
  EXPECT_FALSE(a.partings[0].different_collectives);
  EXPECT_EQ(a.without_records, std::vector<int>{1});
  EXPECT_TRUE(a.partings[0].never_reached.empty());
  EXPECT_NE(a.text.find("no file from rank(s) 1"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("rank 0 (node0, step 7): #6 all_reduce of 4000 B Float (MPI): started"),
            std::string::npos)
      << a.text;
}

TEST(FlightAnalysis, NamesTheRankThatNeverReachedIt) {
  // Rank 1 completed #1-#5 and never queued #6, where ranks 0 and 2 wait.
  const FlightAnalysis a =
      analyse_flights({flight_of(0, 5, 1), flight_of(1, 5), flight_of(2, 5, 1)}, 3);
  ASSERT_EQ(a.partings.size(), 1u);
  EXPECT_EQ(a.partings[0].sequence, 6u);
  EXPECT_EQ(a.partings[0].never_reached, std::vector<int>{1});
  EXPECT_TRUE(a.without_records.empty());
  EXPECT_NE(a.text.find("rank 1 (node1, step 7): never reached #6; its latest: #5"),
            std::string::npos)
      << a.text;
}

TEST(FlightAnalysis, NamesBothCollectivesWhereTheRanksDiffer) {
  RankFlight skipped = flight_of(1, 5, 1);
  skipped.records.back().bytes = 1000;  // the next bucket's all-reduce under the same number
  const FlightAnalysis a = analyse_flights({flight_of(0, 5, 1), skipped}, 2);
  ASSERT_EQ(a.partings.size(), 1u);
  EXPECT_EQ(a.partings[0].sequence, 6u);
  EXPECT_TRUE(a.partings[0].different_collectives);
  EXPECT_NE(a.text.find("#6 all_reduce of 4000 B"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("#6 all_reduce of 1000 B"), std::string::npos) << a.text;
}

TEST(FlightAnalysis, NothingPartsWhereEveryCollectiveCompleted) {
  const FlightAnalysis a = analyse_flights({flight_of(0, 4), flight_of(1, 4)}, 2);
  EXPECT_TRUE(a.partings.empty());
  EXPECT_NE(a.text.find("every rank completed collectives 'training' #1 to #4 alike"),
            std::string::npos)
      << a.text;
}

// A background thread's agreements interleave with the training collectives in another order on
// each rank: numbered in one sequence, the ranks "differed" at the first place where the orders
// did. Numbered apart, the analysis finds where they really part: rank 1 never reached the
// training thread's #4.
TEST(FlightAnalysis, EachThreadsCollectivesAreNumberedApart) {
  auto run = [](int rank, bool writer_first, int training) {
    FlightRecorder recorder(256);
    auto collective = [&](const char* stream, const char* operation, int64_t bytes, bool done) {
      const uint64_t h = recorder.queued(stream, operation, bytes, "Float", "MPI");
      recorder.started(h);
      if (done) recorder.completed(h);
    };
    for (int i = 0; i < training; ++i) {
      if (i == 1 && writer_first) collective("checkpoint writer", "barrier", 0, true);
      collective(kTraining, "all_reduce", 4000, i < 3);
      if (i == 1 && !writer_first) collective("checkpoint writer", "barrier", 0, true);
    }
    return flight_from(rank, recorder);
  };
  const FlightAnalysis a = analyse_flights({run(0, true, 4), run(1, false, 3), run(2, true, 4)}, 3);
  ASSERT_EQ(a.partings.size(), 1u) << a.text;
  EXPECT_EQ(a.partings[0].stream, kTraining);
  EXPECT_EQ(a.partings[0].sequence, 4u);
  EXPECT_FALSE(a.partings[0].different_collectives);
  EXPECT_EQ(a.partings[0].never_reached, std::vector<int>{1});
  EXPECT_NE(a.text.find("collective #4 of 'training' is where the ranks part:"), std::string::npos)
      << a.text;
}

// Collectives that every rank completed are never where the ranks part, even when their records
// differ; the first one some rank has not completed is.
TEST(FlightAnalysis, CompletedCollectivesAreNotWhereTheRanksPart) {
  RankFlight odd = flight_of(1, 5, 1);
  odd.records[2].bytes = 1000;  // completed, yet recorded otherwise
  const FlightAnalysis a = analyse_flights({flight_of(0, 5, 1), odd}, 2);
  ASSERT_EQ(a.partings.size(), 1u) << a.text;
  EXPECT_EQ(a.partings[0].sequence, 6u);
  EXPECT_FALSE(a.partings[0].different_collectives);
}

// NCCL's records say what the backend can tell: the GPU stream reached the collective, or it
// waits behind earlier work there.
TEST(FlightAnalysis, SaysWhatNcclsStatesMean) {
  FlightRecorder recorder(8);
  recorder.started(recorder.queued(kTraining, "all_reduce", 8, "Float", "NCCL"));
  RankFlight started = flight_from(0, recorder);
  FlightRecorder behind(8);
  behind.queued(kTraining, "all_reduce", 8, "Float", "NCCL");
  const FlightAnalysis a = analyse_flights({started, flight_from(1, behind)}, 2);
  EXPECT_NE(a.text.find("started (its GPU stream reached it)"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("queued (behind earlier work on its GPU stream)"), std::string::npos)
      << a.text;
}

// One job's files: another job's (a restart in the same run.dir, another world size) are left
// out and named, whichever job is chosen.
TEST(FlightAnalysis, OnlyOneJobsFilesAreAnalysed) {
  RankFlight stale = flight_of(1, 9);  // an earlier job's rank 1, of the same size
  stale.job = "job B";
  stale.written_s -= 3600;
  RankFlight larger = flight_of(5, 9);  // a job of 6 ranks
  larger.job = "job C";
  larger.world_size = 6;
  larger.written_s -= 60;
  const std::vector<RankFlight> all = {flight_of(0, 5, 1), stale, larger, flight_of(2, 5, 1)};
  const JobFlights newest = flights_of_job(all);
  EXPECT_EQ(newest.job, "job A");
  EXPECT_EQ(newest.world_size, 3);
  ASSERT_EQ(newest.flights.size(), 2u);
  EXPECT_NE(newest.left_out.find("left out 2 flight file(s) of other jobs: rank 1 of a job of 3 "
                                 "ranks"),
            std::string::npos)
      << newest.left_out;
  EXPECT_NE(newest.left_out.find("rank 5 of a job of 6 ranks"), std::string::npos);
  const FlightAnalysis a = analyse_flights(newest.flights, newest.world_size);
  EXPECT_EQ(a.without_records, std::vector<int>{1});
  const JobFlights chosen = flights_of_job(all, std::string("job C"));
  EXPECT_EQ(chosen.world_size, 6);
  ASSERT_EQ(chosen.flights.size(), 1u);
  EXPECT_EQ(chosen.flights[0].rank, 5);
  EXPECT_TRUE(flights_of_job(all, std::string("job D")).flights.empty());
}

TEST(FlightFile, ReadsBackWhatWasWritten) {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("ddptrain_flight_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  EXPECT_FALSE(is_flight_directory(directory));
  RankFlight written = flight_of(1, 3, 1);
  written.records.front().stream = "checkpoint writer";
  write_flight_file(directory, written);
  write_flight_file(directory, flight_of(0, 0));  // no records at all
  EXPECT_TRUE(is_flight_directory(directory));
  const std::vector<RankFlight> read = read_flight_directory(directory).flights;
  ASSERT_EQ(read.size(), 2u);
  EXPECT_TRUE(read[0].records.empty());
  const RankFlight& back = read[1];
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.host, "node1");
  EXPECT_EQ(back.job, "job A");
  EXPECT_EQ(back.world_size, 3);
  EXPECT_EQ(back.step, 7);
  EXPECT_EQ(back.written_s, written.written_s);
  ASSERT_EQ(back.records.size(), written.records.size());
  for (size_t i = 0; i < back.records.size(); ++i) {
    const FlightRecord& a = back.records[i];
    const FlightRecord& b = written.records[i];
    EXPECT_EQ(a.stream, b.stream);
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

// A format-1 file (no stream, no job: written before both existed) of 4 ranks, as that format's
// writer laid it out.
void write_format_1_file(const std::filesystem::path& path, int rank) {
  H5File file = H5File::create(path.string(), MPI_COMM_NULL);
  file.write_attribute("format", std::string("ddptrain flight records 1"));
  file.write_attribute("rank", static_cast<int64_t>(rank));
  file.write_attribute("world_size", int64_t{4});
  file.write_attribute("host", std::string("old"));
  file.write_attribute("step", int64_t{3});
  file.write_attribute("written_s", 1.0e9);
  file.write_tensor("sequence", torch::tensor({int64_t{1}}), true);
  file.write_tensor("bytes", torch::tensor({int64_t{8}}), true);
  for (const char* name : {"queued_s", "started_s", "ended_s"}) {
    file.write_tensor(name, torch::tensor({1.0e9}, torch::kDouble), true);
  }
  file.write_strings("operation", {"all_reduce"});
  file.write_strings("dtype", {"Float"});
  file.write_strings("backend", {"MPI"});
  file.write_strings("state", {"completed"});
  file.close();
}

// The files of other jobs, of the older format, and files that are no flight file at all are left
// out of the analysis, and named; the newest job's are analysed.
TEST(FlightFile, OneJobIsAnalysedAndTheRestNamed) {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("ddptrain_flights_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  write_flight_file(directory, flight_of(0, 5, 1));
  write_flight_file(directory, flight_of(2, 5, 1));
  write_format_1_file(directory / "rank_00003.h5", 3);
  std::ofstream(directory / "rank_00001.h5") << "not HDF5";
  const FlightDirectory read = read_flight_directory(directory);
  ASSERT_EQ(read.flights.size(), 3u);
  EXPECT_EQ(read.flights[2].job, "format 1, 4 ranks");
  EXPECT_EQ(read.flights[2].records.at(0).stream, kTraining);
  ASSERT_EQ(read.unreadable.size(), 1u);
  EXPECT_NE(read.unreadable[0].find("rank_00001.h5"), std::string::npos);
  const std::string text = analyse_flight_directory(directory);
  EXPECT_NE(text.find("flight records of rank(s) 0, 2 of 3; no file from rank(s) 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("left out 1 flight file(s) of other jobs: rank 3 of a job of 4 ranks"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("left out 1 flight file(s) that could not be read: rank_00001.h5"),
            std::string::npos)
      << text;
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace ddpt
