// Where a step's time goes: each phase of the training loop, summed over the steady steps (after
// the warm-up), for the run summary. On a CPU device, this rank's wall clock around each phase
// (LapTimer): the phases are the work itself. On a GPU the host only queues the work, so the
// phases are timed on the GPU instead, with CUDA events recorded where the host laps
// (GpuLapTimer).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>

#include "util/stopwatch.hpp"

namespace ddpt {

struct StepSplit {
  double zero_sync = 0;  // zeroing gradients, broadcasting buffers from rank 0
  double data = 0;       // waiting for batches (read in the step when data.prefetch = 0)
  double forward = 0;    // the copy to the device, forward and loss
  double backward = 0;   // backward with the gradient all-reduces it starts, comm wait excepted
  double comm_wait = 0;  // waiting for the other ranks in forward and backward (rank_waits.hpp)
  double update = 0;     // finite check, loss scaling, clipping, optimizer step, moving average
  double total = 0;      // the steady steps from the first one's start to the last one's end; the
                         // rest is between steps: stop vote, checkpoints, metrics rows, progress
  int64_t steps = 0;
  // Timed on the GPU (GpuLapTimer): each phase is the GPU's time from the end of the phase before,
  // its queued work and its idle time alike; comm_wait is the compute stream's waits for the
  // collectives, marked where the host ordered it after them.
  bool on_gpu = false;

  // "48.12 ms per step: forward 10.20 (21%), backward ..., between steps 0.10 (0%)"; empty
  // without steps.
  std::string describe() const;
};

// Seconds since the last lap (or since construction).
class LapTimer {
 public:
  double lap() {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  Clock::time_point last_ = Clock::now();
};

// The GPU's side of StepSplit: a CUDA event recorded on the device's current stream at each lap,
// where the host's LapTimer laps. The GPU passes an event when the work queued before it is done,
// so the time between two events is the GPU's time for the phase that ends at the later one: its
// work, and the GPU's idle time while it waited for the host to queue more. Events are read only
// in collect(), after the host has waited for the GPU anyway (a metrics row), so timing adds no
// synchronisation to a step. Does nothing unless the device is a CUDA device of a LibTorch built
// with CUDA, and switches itself off, with one warning, at the first CUDA error: a timing aid
// never stops a run.
class GpuLapTimer {
 public:
  explicit GpuLapTimer(const c10::Device& device);
  ~GpuLapTimer();
  GpuLapTimer(const GpuLapTimer&) = delete;
  GpuLapTimer& operator=(const GpuLapTimer&) = delete;

  bool enabled() const { return impl_ != nullptr; }
  // Marks the end of `phase` (a StepSplit member) now; nullptr: the time since the last mark
  // belongs to no phase (between steps). &StepSplit::comm_wait: the end of a wait inside a phase
  // (after lap_before_wait()).
  void lap(double StepSplit::*phase) noexcept;
  // Marks the start of a wait for the other ranks inside the phase in progress: the time since the
  // last mark belongs to the phase that the next lap() of a phase other than comm_wait ends.
  void lap_before_wait() noexcept;
  // Adds the time between the marks so far to `split`: to each phase and to total. Waits for the
  // GPU to reach the last mark, which stays: the next time runs from it.
  void collect(StepSplit& split) noexcept;
  // Forgets the marks (the warm-up's).
  void discard() noexcept;

 private:
  struct Events;
  void record(double StepSplit::*phase, bool before_wait) noexcept;
  // Stops timing, with one warning: `what` failed, because of `why`.
  void switch_off(const char* what, const char* why) noexcept;
  std::unique_ptr<Events> impl_;
};

}  // namespace ddpt
