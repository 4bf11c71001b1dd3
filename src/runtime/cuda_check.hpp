// Checked CUDA runtime and NCCL calls (compiled only with the NCCL backend).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "util/error.hpp"

#define DDPT_CHECK_CUDA(call)                                                                 \
  do {                                                                                        \
    const cudaError_t ddpt_cuda_status_ = (call);                                             \
    if (ddpt_cuda_status_ != cudaSuccess)                                                     \
      throw ::ddpt::CudaError("CUDA", #call, cudaGetErrorString(ddpt_cuda_status_), __FILE__, \
                              __LINE__);                                                      \
  } while (0)

#define DDPT_CHECK_NCCL(call)                                                                 \
  do {                                                                                        \
    const ncclResult_t ddpt_nccl_status_ = (call);                                            \
    if (ddpt_nccl_status_ != ncclSuccess)                                                     \
      throw ::ddpt::NcclError("NCCL", #call, ncclGetErrorString(ddpt_nccl_status_), __FILE__, \
                              __LINE__);                                                      \
  } while (0)
