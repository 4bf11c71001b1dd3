// RAII over CUDA streams and events. Move-only; destructors never throw.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "runtime/cuda_check.hpp"

namespace ddpt {

class CudaStream {
 public:
  // A non-blocking stream on the current device: it does not synchronise with the legacy stream.
  CudaStream() { DDPT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&&) = delete;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  // Timing disabled: the cheapest event, used only for ordering streams.
  CudaEvent() { DDPT_CHECK_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~CudaEvent() {
    if (event_) cudaEventDestroy(event_);
  }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&&) = delete;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream) { DDPT_CHECK_CUDA(cudaEventRecord(event_, stream)); }
  // Work queued on `stream` after this call waits for the recorded point (no host wait).
  void block(cudaStream_t stream) const { DDPT_CHECK_CUDA(cudaStreamWaitEvent(stream, event_, 0)); }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace ddpt
