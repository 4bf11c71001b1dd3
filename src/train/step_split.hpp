// Where a step's time goes: this rank's wall clock around each phase of the training loop, summed
// over the steady steps (after the warm-up), for the run summary. On a CPU device the phases are
// the work itself; on a GPU they are only the host's side (the work is queued asynchronously), so
// the summary shows the split for CPU devices only.
#pragma once

#include <cstdint>
#include <string>

#include "util/stopwatch.hpp"

namespace ddpt {

struct StepSplit {
  double zero_sync = 0;  // zeroing gradients, broadcasting buffers from rank 0
  double data = 0;       // waiting for batches (read in the step when data.prefetch = 0)
  double forward = 0;    // the copy to the device, forward and loss
  double backward = 0;   // backward with the gradient all-reduces it starts, comm wait excepted
  double comm_wait = 0;  // waiting for the last all-reduces after backward
  double update = 0;     // finite check, loss scaling, clipping, optimizer step, moving average
  double total = 0;      // the steady steps from the first one's start to the last one's end; the
                         // rest is between steps: stop vote, checkpoints, metrics rows, progress
  int64_t steps = 0;

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

}  // namespace ddpt
