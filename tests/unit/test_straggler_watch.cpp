// The straggler warning: a rank slower than the median by the factor in 3 metrics rows running is
// named once, with its host; again only after it recovered and relapsed; never below the factor,
// for a single rank, or when switched off.
#include <gtest/gtest.h>

#include "run/straggler_watch.hpp"

namespace ddpt {
namespace {

const std::vector<std::string> kHosts{"node-a", "node-a", "node-b"};
// Rank 2 takes 30 ms a step where the others take 10: 3x the median.
const std::vector<double> kRank2Slow{0.010, 0.011, 0.030};
const std::vector<double> kEven{0.010, 0.011, 0.0105};

TEST(StragglerWatch, NamedAfterThreeSlowRowsRunningOnce) {
  StragglerWatch watch(1.2, kHosts);
  EXPECT_TRUE(watch.observe(10, kRank2Slow).empty());
  EXPECT_TRUE(watch.observe(20, kRank2Slow).empty());
  const std::vector<std::string> lines = watch.observe(30, kRank2Slow);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("rank 2 (node-b)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("30.00 ms"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("2.73x the median"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("up to step 30"), std::string::npos) << lines[0];
  EXPECT_TRUE(watch.observe(40, kRank2Slow).empty()) << "named twice without recovering";
  EXPECT_TRUE(watch.observe(50, kRank2Slow).empty());
}

TEST(StragglerWatch, ARecoveredRankThatRelapsesIsNamedAgain) {
  StragglerWatch watch(1.2, kHosts);
  for (int row = 1; row <= 3; ++row) watch.observe(row, kRank2Slow);
  EXPECT_TRUE(watch.observe(4, kEven).empty());
  EXPECT_TRUE(watch.observe(5, kRank2Slow).empty());
  EXPECT_TRUE(watch.observe(6, kRank2Slow).empty());
  EXPECT_EQ(watch.observe(7, kRank2Slow).size(), 1u);
}

TEST(StragglerWatch, AnInterruptedRunOfSlowRowsStartsOver) {
  StragglerWatch watch(1.2, kHosts);
  watch.observe(1, kRank2Slow);
  watch.observe(2, kRank2Slow);
  watch.observe(3, kEven);
  EXPECT_TRUE(watch.observe(4, kRank2Slow).empty());
  EXPECT_TRUE(watch.observe(5, kRank2Slow).empty());
  EXPECT_EQ(watch.observe(6, kRank2Slow).size(), 1u);
}

TEST(StragglerWatch, NothingBelowTheFactorOrWhenOff) {
  StragglerWatch watch(1.2, kHosts);
  // 1.19x the median: not a straggler.
  for (int row = 1; row <= 5; ++row)
    EXPECT_TRUE(watch.observe(row, {0.010, 0.010, 0.0119}).empty());
  StragglerWatch off(0, kHosts);
  for (int row = 1; row <= 5; ++row) EXPECT_TRUE(off.observe(row, kRank2Slow).empty());
}

// Steps of a fraction of a millisecond cross the factor by noise alone (seen at 0.3 ms a step):
// a rank must also be a millisecond slower.
TEST(StragglerWatch, SubMillisecondDifferencesAreNoise) {
  StragglerWatch watch(1.2, kHosts);
  for (int row = 1; row <= 5; ++row) {
    EXPECT_TRUE(watch.observe(row, {0.0003, 0.0003, 0.0009}).empty());
  }
}

TEST(StragglerWatch, TwoRanksCompareWithTheirMean) {
  // With two ranks the median is their mean: 30 ms against 20 is 1.5x.
  StragglerWatch watch(1.2, {"a", "b"});
  for (int row = 1; row <= 2; ++row) watch.observe(row, {0.010, 0.030});
  const std::vector<std::string> lines = watch.observe(3, {0.010, 0.030});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("rank 1 (b)"), std::string::npos) << lines[0];
}

TEST(StragglerWatch, RowsWithoutTimesNameNobody) {
  StragglerWatch watch(1.2, kHosts);
  for (int row = 1; row <= 4; ++row) EXPECT_TRUE(watch.observe(row, {0, 0, 0}).empty());
  StragglerWatch one(1.2, {"a"});
  for (int row = 1; row <= 4; ++row) EXPECT_TRUE(one.observe(row, {0.5}).empty());
}

}  // namespace
}  // namespace ddpt
