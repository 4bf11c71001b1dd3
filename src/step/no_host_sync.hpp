// Tests only (DDPTRAIN_TEST_NO_HOST_SYNC=1): while one lives, any operation of LibTorch's that
// makes the host wait for the GPU (a read back, a synchronous copy, a stream synchronisation)
// throws instead (c10's CUDA sync debug mode, torch.cuda.set_sync_debug_mode("error") in Python).
// The training loop holds one around each step with the step checks on the device, so a GPU run
// proves what tests/mpi/test_guards.cpp counts on the CPU: the step reads nothing back. Without
// CUDA, or switched off, it does nothing.
#pragma once

#include <c10/core/Device.h>

namespace ddpt {

class NoHostSync {
 public:
  NoHostSync(bool on, const c10::Device& device);
  ~NoHostSync();
  NoHostSync(const NoHostSync&) = delete;
  NoHostSync& operator=(const NoHostSync&) = delete;

 private:
  bool on_ = false;
};

}  // namespace ddpt
