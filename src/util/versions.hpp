// Every choice ddptrain makes by the version of a library it is built against, in one place:
// the code tests these feature macros, never version numbers. CI builds against Debian 12
// (LibTorch 1.13, HDF5 1.10, Open MPI 4.1) and Debian 13 (LibTorch 2.6, HDF5 1.14, Open MPI 5;
// CUDA 12.4 with NCCL 2.22); the GPU recipe against PyTorch 2.11 with CUDA 13.
// (HDF5 needs none: h5/ uses only calls whose signature is the same in 1.10 and 1.14.)
#pragma once

#include <torch/version.h>

#define DDPTRAIN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// at::scaled_dot_product_attention (LibTorch 2.0): flash and memory-efficient kernels on CUDA.
#define DDPTRAIN_TORCH_HAS_SDPA DDPTRAIN_TORCH_AT_LEAST(2, 0)
// at::autocast::set_autocast_dtype(device_type, ...) and set_autocast_enabled(device_type, ...)
// (2.4) replaced the per-device set_autocast_gpu_dtype/set_enabled/set_autocast_cpu_dtype.
#define DDPTRAIN_TORCH_AUTOCAST_BY_DEVICE_TYPE DDPTRAIN_TORCH_AT_LEAST(2, 4)

#ifdef DDPTRAIN_HAVE_NCCL
#include <nccl.h>
// ncclAvg and ncclBfloat16 (NCCL 2.10).
#define DDPTRAIN_NCCL_HAS_AVG_AND_BF16 (NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0))
// ncclGetLastError: NCCL's own message for the last error (NCCL 2.13).
#define DDPTRAIN_NCCL_HAS_LAST_ERROR (NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0))
#endif
