#include "runtime/gpu_inventory.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#ifdef DDPTRAIN_HAVE_NCCL
#include <cuda_runtime.h>
#endif

namespace ddpt {

std::string describe_gpus() {
  std::string runtime;
#ifdef DDPTRAIN_HAVE_NCCL
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    runtime = std::string("CUDA runtime: ") + cudaGetErrorString(status);
  } else {
    runtime = "CUDA runtime sees " + std::to_string(count) + " device(s)";
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
        // What decides speed and fit: memory, architecture (bf16 needs sm_80+), SM count.
        runtime += fmt::format("{}{} ({:.1f} GiB, sm_{}{}, {} SMs)", d == 0 ? ": " : ", ",
                               prop.name, static_cast<double>(prop.totalGlobalMem) / (1 << 30),
                               prop.major, prop.minor, prop.multiProcessorCount);
      }
    }
  }
#else
  runtime = "built without the CUDA runtime";
#endif
  if (!torch::cuda::is_available()) {
    return "none usable by LibTorch (" + runtime + ")";
  }
  return std::to_string(torch::cuda::device_count()) + " (" + runtime + ")";
}

}  // namespace ddpt
