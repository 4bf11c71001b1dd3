// Independent tasks shared out among a few threads, each thread taking the next task as it is
// free. ATen's at::parallel_for is not used for this: it is a header template that runs
// in parallel only in code compiled with the OpenMP LibTorch was built with, which ddptrain is not
// (ATen/ParallelOpenMP.h: INTRA_OP_PARALLEL is defined under _OPENMP).
#pragma once

#include <cstdint>
#include <functional>

namespace ddpt {

// Runs task(i) for every i in [0, count) on `threads` threads at most (the calling one among
// them). If a task throws, the others take no new task, and the first exception is rethrown here
// once every thread has stopped.
void run_tasks(int64_t count, int threads, const std::function<void(int64_t)>& task);

}  // namespace ddpt
