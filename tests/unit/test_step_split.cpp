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

// Timed on a GPU, the wait for the last all-reduces is a stream's wait inside backward: no comm
// wait phase (the field would always read 0).
TEST(StepSplit, OnAGpuHasNoCommWaitPhase) {
  StepSplit split;
  split.on_gpu = true;
  split.steps = 2;
  split.total = 0.1;  // 50 ms per step
  split.forward = 0.03;
  split.backward = 0.05;
  split.update = 0.01;
  split.data = 0.002;
  split.zero_sync = 0.004;
  EXPECT_EQ(split.describe(),
            "50.00 ms per step: forward 15.00 (30%), backward 25.00 (50%), optimizer 5.00 (10%), "
            "data 1.00 (2%), zero+sync 2.00 (4%), between steps 2.00 (4%)");
}

// On a CPU device there is nothing to time on a GPU: every call leaves the split as it was.
TEST(GpuLapTimer, DoesNothingOnACpuDevice) {
  GpuLapTimer timer(c10::Device(c10::kCPU));
  EXPECT_FALSE(timer.enabled());
  StepSplit split;
  timer.lap(nullptr);
  timer.lap(&StepSplit::forward);
  timer.lap(&StepSplit::backward);
  timer.collect(split);
  timer.discard();
  EXPECT_EQ(split.forward, 0);
  EXPECT_EQ(split.total, 0);
  EXPECT_FALSE(split.on_gpu);
}

}  // namespace
}  // namespace ddpt
