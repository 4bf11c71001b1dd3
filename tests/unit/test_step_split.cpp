#include <gtest/gtest.h>

#include "train/step_split.hpp"

namespace ddpt {
namespace {

TEST(StepSplit, ShowsEachPhasePerStepAndTheRestAsBetweenSteps) {
  StepSplit split;
  split.steps = 4;
  split.total = 0.4;  // 100 ms per step
  split.forward = 0.1;
  split.backward = 0.16;
  split.comm_wait = 0.02;
  split.update = 0.08;
  split.data = 0.004;
  split.zero_sync = 0.008;
  EXPECT_EQ(split.describe(),
            "100.00 ms per step: forward 25.00 (25%), backward 40.00 (40%), comm wait 5.00 (5%), "
            "optimizer 20.00 (20%), data 1.00 (1%), zero+sync 2.00 (2%), between steps 7.00 (7%)");
}

TEST(StepSplit, SaysNothingWithoutSteps) {
  EXPECT_EQ(StepSplit().describe(), "");
}

}  // namespace
}  // namespace ddpt
