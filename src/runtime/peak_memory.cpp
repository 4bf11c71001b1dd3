#include "runtime/peak_memory.hpp"

#include <sys/resource.h>

#include <fstream>
#include <string>

#ifdef DDPTRAIN_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ddpt {
namespace {

// The process's resident shared memory (RssShmem in /proc/self/status), or 0 where unknown.
int64_t resident_shared_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "RssShmem:") {
      int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace

PeakMemory peak_memory(const c10::Device& device) {
  PeakMemory peak;
#ifdef DDPTRAIN_TORCH_CUDA
  if (device.is_cuda()) {
    // Index 0 of each statistic is the aggregate over the allocator's pools.
    peak.bytes =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[0].peak;
    peak.on_gpu = true;
    return peak;
  }
#else
  (void)device;
#endif
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0)
    peak.bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  peak.shared_bytes = resident_shared_bytes();
  return peak;
}

}  // namespace ddpt
