#include "runtime/peak_memory.hpp"

#include <sys/resource.h>

#ifdef DDPTRAIN_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ddpt {

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
  return peak;
}

}  // namespace ddpt
