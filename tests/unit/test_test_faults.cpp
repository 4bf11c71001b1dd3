// The faults the DDPTRAIN_TEST_* variables ask for (setup/test_faults.hpp): each for its rank
// only, each hook where the variable says, a malformed value refused by name, and none at all
// where nothing is set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "setup/test_faults.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

const std::vector<std::string> kVariables = {
    "DDPTRAIN_TEST_SLOW_RANK",       "DDPTRAIN_TEST_SLOW_PHASES",  "DDPTRAIN_TEST_HOLD_PHASES",
    "DDPTRAIN_TEST_SKIP_ALL_REDUCE", "DDPTRAIN_TEST_NO_HOST_SYNC", "DDPTRAIN_TEST_SHARE_GPU",
    "DDPTRAIN_TEST_BATCH_LIMIT"};

// Each test starts and ends with none of the variables set.
class TestFaults : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const std::string& name : kVariables) unsetenv(name.c_str());
  }
};

TEST_F(TestFaults, NoVariableNoFault) {
  const auto faults = faults_from_environment(0);
  faults->step_starts(1);
  EXPECT_FALSE(faults->leave_out_all_reduce());
  EXPECT_FALSE(faults->host_waits_forbidden());
  EXPECT_FALSE(faults->ranks_may_share_gpu());
  EXPECT_FALSE(faults->trial_sample_limit().has_value());
  EXPECT_FALSE(no_faults().leave_out_all_reduce());
}

TEST_F(TestFaults, AllReduceLeftOutOnceFromItsStepOnItsRankOnly) {
  setenv("DDPTRAIN_TEST_SKIP_ALL_REDUCE", "1:3", 1);
  const auto rank1 = faults_from_environment(1);
  const auto rank0 = faults_from_environment(0);
  for (int64_t step = 1; step <= 2; ++step) {
    rank1->step_starts(step);
    EXPECT_FALSE(rank1->leave_out_all_reduce()) << "step " << step;
  }
  rank1->step_starts(3);
  rank0->step_starts(3);
  EXPECT_TRUE(rank1->leave_out_all_reduce());
  EXPECT_FALSE(rank1->leave_out_all_reduce());  // the first all-reduce of the step only
  EXPECT_FALSE(rank0->leave_out_all_reduce());
}

TEST_F(TestFaults, SwitchesAndLimitAreEveryRanks) {
  setenv("DDPTRAIN_TEST_NO_HOST_SYNC", "1", 1);
  setenv("DDPTRAIN_TEST_SHARE_GPU", "1", 1);
  setenv("DDPTRAIN_TEST_BATCH_LIMIT", "48", 1);
  for (int rank : {0, 5}) {
    const auto faults = faults_from_environment(rank);
    EXPECT_TRUE(faults->host_waits_forbidden());
    EXPECT_TRUE(faults->ranks_may_share_gpu());
    EXPECT_EQ(faults->trial_sample_limit(), 48);
  }
}

TEST_F(TestFaults, MalformedValuesAreRefusedByName) {
  for (const char* text : {"3", "x:10", ":10", "1:ten", "1:-5", "-1:10"}) {
    setenv("DDPTRAIN_TEST_HOLD_PHASES", text, 1);
    try {
      faults_from_environment(0);
      ADD_FAILURE() << "accepted DDPTRAIN_TEST_HOLD_PHASES=" << text;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("DDPTRAIN_TEST_HOLD_PHASES"), std::string::npos);
    }
  }
  unsetenv("DDPTRAIN_TEST_HOLD_PHASES");
  setenv("DDPTRAIN_TEST_BATCH_LIMIT", "many", 1);
  EXPECT_THROW(faults_from_environment(0), ConfigError);
}

}  // namespace
}  // namespace ddpt
