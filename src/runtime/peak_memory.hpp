// The most memory this rank has held so far: on a CPU the process's peak resident set (what the
// kernel's OOM killer and a job's memory limit count), on a GPU the peak of what LibTorch's
// allocator has handed out on the rank's device (what out-of-memory errors count; the allocator
// reserves somewhat more). On a CPU it says too how much of the resident set is memory the node's
// ranks share (their buckets, ZeRO's node copies of the parameters, MPI's own segments): each rank
// counts those pages, the node holds them once.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace ddpt {

struct PeakMemory {
  int64_t bytes = 0;
  bool on_gpu = false;       // allocated on the device; else resident in host memory
  int64_t shared_bytes = 0;  // CPU: resident now in shared memory (RssShmem), counted in `bytes`
};

PeakMemory peak_memory(const c10::Device& device);

}  // namespace ddpt
