#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "ddp/rank_waits.hpp"
#include "run/run_meter.hpp"
#include "step/step_split.hpp"

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

// Timed on a GPU, comm wait is the compute stream's waits for the collectives (marked around each
// wait, GpuLapTimer::lap_before_wait), a phase as on a CPU.
TEST(StepSplit, OnAGpuShowsTheStreamsCommWait) {
  StepSplit split;
  split.on_gpu = true;
  split.steps = 2;
  split.total = 0.1;  // 50 ms per step
  split.forward = 0.03;
  split.backward = 0.045;
  split.comm_wait = 0.005;
  split.update = 0.01;
  split.data = 0.002;
  split.zero_sync = 0.004;
  EXPECT_EQ(split.describe(),
            "50.00 ms per step: forward 15.00 (30%), backward 22.50 (45%), comm wait 2.50 (5%), "
            "optimizer 5.00 (10%), data 1.00 (2%), zero+sync 2.00 (4%), between steps 2.00 (4%)");
}

// On a CPU device there is nothing to time on a GPU: every call leaves the split as it was.
TEST(GpuLapTimer, DoesNothingOnACpuDevice) {
  GpuLapTimer timer(c10::Device(c10::kCPU));
  EXPECT_FALSE(timer.enabled());
  StepSplit split;
  timer.lap(nullptr);
  timer.lap_before_wait();
  timer.lap(&StepSplit::comm_wait);
  timer.lap(&StepSplit::forward);
  timer.lap(&StepSplit::backward);
  timer.collect(split);
  timer.discard();
  EXPECT_EQ(split.forward, 0);
  EXPECT_EQ(split.total, 0);
  EXPECT_FALSE(split.on_gpu);
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A wait for the other ranks inside a phase (the engine's RankWaits::Scope) is comm wait, not the
// phase: forward and backward keep the rank's own work, which the straggler watch compares. (Lower
// bounds only: a sleep lasts at least as long as asked.)
TEST(PhaseLaps, AWaitForTheOtherRanksIsCommWaitNotThePhase) {
  StepSplit split;
  GpuLapTimer gpu(c10::Device(c10::kCPU));
  PhaseLaps laps(split, gpu);
  RankWaits waits;
  waits.observe(&laps);
  sleep_ms(20);  // forward's own work
  {
    const RankWaits::Scope waiting(&waits);
    sleep_ms(30);
    const RankWaits::Scope inner(&waits);  // a wait inside a wait: one wait, all of it comm wait
    sleep_ms(30);
  }
  sleep_ms(20);
  laps.end(&StepSplit::forward);
  EXPECT_GE(split.comm_wait, 0.06);
  EXPECT_GE(split.forward, 0.04);
  EXPECT_EQ(laps.compute_seconds(), split.forward);
  EXPECT_EQ(laps.waited_seconds(), split.comm_wait);
  // Without an observer a wait is not told to anyone: it is the phase's.
  waits.observe(nullptr);
  {
    const RankWaits::Scope waiting(&waits);
    sleep_ms(30);
  }
  laps.end(&StepSplit::backward);
  EXPECT_GE(split.backward, 0.03);
  EXPECT_EQ(laps.waited_seconds(), split.comm_wait);
  EXPECT_EQ(laps.compute_seconds(), split.forward + split.backward);
}

}  // namespace
}  // namespace ddpt
