#include "step/no_host_sync.hpp"

#ifdef DDPTRAIN_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace ddpt {

#ifdef DDPTRAIN_TORCH_CUDA
NoHostSync::NoHostSync(bool on, const c10::Device& device) : on_(on && device.is_cuda()) {
  if (on_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
}

NoHostSync::~NoHostSync() {
  if (on_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
}
#else
NoHostSync::NoHostSync(bool /*on*/, const c10::Device& /*device*/) {}
NoHostSync::~NoHostSync() = default;
#endif

}  // namespace ddpt
