// One step's phases lapped on the host's and the GPU's clocks, its waits for the other ranks
// apart: what the trainer times and the run's meter reads.
#pragma once

#include "ddp/rank_waits.hpp"
#include "step/step_split.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

// The phases of one step on both clocks: end(phase) adds the host's time since the last lap to
// the host's split and marks the phase's end on the GPU (GpuLapTimer; nothing on a CPU device).
// The engine tells it of each wait for the other ranks inside a phase (ddp/rank_waits.hpp): the
// wait goes to comm wait on both clocks, not to the phase, so that forward and backward are this
// rank's own work (what the straggler watch compares).
class PhaseLaps final : public WaitObserver {
 public:
  // Marks the step's start on the GPU: its time since the last step's end is between steps.
  PhaseLaps(StepSplit& host, GpuLapTimer& gpu) : host_(host), gpu_(gpu) { gpu_.lap(nullptr); }
  PhaseLaps(const PhaseLaps&) = delete;
  PhaseLaps& operator=(const PhaseLaps&) = delete;
  // Returns the host's seconds in the phase, its waits for the other ranks left out.
  double end(double StepSplit::*phase) noexcept {
    const double seconds = before_wait_ + timer_.lap();
    before_wait_ = 0;
    host_.*phase += seconds;
    if (phase == &StepSplit::data) data_seconds_ += seconds;
    if (phase == &StepSplit::forward || phase == &StepSplit::backward) compute_seconds_ += seconds;
    gpu_.lap(phase);
    return seconds;
  }
  // WaitObserver: the phase's time so far is its own; the wait that follows is comm wait.
  void wait_begins() noexcept override {
    before_wait_ += timer_.lap();
    gpu_.lap_before_wait();
  }
  void wait_ends() noexcept override {
    const double seconds = timer_.lap();
    host_.comm_wait += seconds;
    waited_seconds_ += seconds;
    gpu_.lap(&StepSplit::comm_wait);
  }
  // The host's time in the data phase of this step (all micro-steps): the wait for batches.
  double data_seconds() const { return data_seconds_; }
  // The host's time in forward and backward, its waits for the other ranks left out.
  double compute_seconds() const { return compute_seconds_; }
  // The host's time waiting for the other ranks in this step (on a GPU the host hardly waits:
  // the GPU does, in the GPU's comm wait).
  double waited_seconds() const { return waited_seconds_; }

 private:
  LapTimer timer_;
  StepSplit& host_;
  GpuLapTimer& gpu_;
  double before_wait_ = 0;  // the phase in progress, up to its waits
  double data_seconds_ = 0;
  double compute_seconds_ = 0;
  double waited_seconds_ = 0;
};

}  // namespace ddpt
