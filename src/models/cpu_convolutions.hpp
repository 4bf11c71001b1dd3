// Which kernels run LibTorch's float32 convolutions on the CPU (the CNN's, and a TorchScript
// model's), checked once per process before training trusts them.
//
// LibTorch sends CPU convolutions to oneDNN where it was built with it. Debian 13's LibTorch 2.6,
// linked against Debian's oneDNN 3.7.2, computes wrong input gradients for stride-1 convolutions
// whose channel counts are not a multiple of oneDNN's block (16 channels for its AVX-512
// kernels, 8 for AVX2; capped at SSE4.1 or AVX it was right): off by 33-110% of their largest
// value, often different each run, sometimes NaN: they read memory nobody wrote, so where the
// allocator hands out fresh (zeroed) pages they come out right, and where it hands back freed
// memory they take in whatever it held (NaN in 2 of 3 steps of the CNN when it held NaN).
// The forward pass and the weight gradients were right, and so were 16 and 64 channels;
// Debian 12's LibTorch 1.13 with oneDNN 2.6.3 got every case right, with NaN left in freed
// memory too. Seen on the 2-core AMD EPYC machine (AVX-512) in 2026-11, where a CNN of 4 and 8
// channels trained differently each run, and NaN gradients skipped steps now and then.
// So oneDNN's convolutions are compared with ATen's own kernels (float64) on a few small cases
// like those, each after leave_nan_in_freed_memory(): a check on clean memory passed about one
// run in three and let training meet the NaN later. Where any case differs, LibTorch's oneDNN
// is turned off for this process and the convolutions run on ATen's kernels (im2col and the BLAS).
#pragma once

#include <string>

#include "runtime/job.hpp"

namespace ddpt {

struct CpuConvolutions {
  bool onednn = false;  // oneDNN runs them (checked); false: ATen's own kernels
  std::string text;     // for the banner and `ddptrain info`, e.g. "oneDNN (checked)"
  std::string problem;  // why oneDNN was turned off; empty when it was not
};

// Runs the check the first time (a few tens of milliseconds: benchmarks.md, "Choices measured":
// convolution check; it draws from its own random generator, so the run's seeded one is
// untouched) and turns oneDNN off where it failed; later calls return the same answer.
const CpuConvolutions& choose_cpu_convolutions();

// Fills the CPU allocator's free memory with NaN (allocates and frees NaN tensors of the sizes a
// small convolution's buffers have): a kernel that reads memory it never wrote then gives NaN
// instead of a result that is right by luck.
void leave_nan_in_freed_memory();

// On a job whose ranks run models on the CPU: chooses (the check runs on this rank's threads, so
// call it before any model runs) and warns with `problem`, once per node, since a node's ranks
// share its CPU and libraries.
void warn_of_cpu_convolution_problem(const Job& job);

}  // namespace ddpt
