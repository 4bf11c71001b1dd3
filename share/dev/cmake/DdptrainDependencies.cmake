# Finds every third-party dependency of ddptrain and fails with a message that says what to install.

find_package(Torch REQUIRED)
# Torch's config adds its own flags (ABI, warnings); keep them.
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
# A LibTorch built with CUDA: its TorchConfig.cmake found c10_cuda (and added it to
# TORCH_LIBRARIES); a CPU LibTorch's config does not look for it.
if(C10_CUDA_LIBRARY)
  set(DDPTRAIN_TORCH_CUDA ON)
else()
  set(DDPTRAIN_TORCH_CUDA OFF)
endif()

find_package(MPI REQUIRED COMPONENTS CXX)

set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "ddptrain needs a parallel (MPI) HDF5, but the HDF5 found is serial "
    "(${HDF5_C_INCLUDE_DIRS}). On Debian: apt-get install libhdf5-openmpi-dev, "
    "or point CMake at it with -DHDF5_C_COMPILER_EXECUTABLE=/usr/bin/h5pcc.")
endif()

# Boost's own BoostConfig.cmake (Boost >= 1.70), not CMake's FindBoost, which CMake 3.30 removes.
if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)
endif()
find_package(Boost 1.70 REQUIRED COMPONENTS program_options)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
# nlohmann/json (Debian: nlohmann-json3-dev), header-only: the safetensors header's parser
# (src/io/safetensors_file.cpp). Found by its header, which every packaging of it installs.
find_path(DDPTRAIN_JSON_INCLUDE_DIR nlohmann/json.hpp)
if(NOT DDPTRAIN_JSON_INCLUDE_DIR)
  message(FATAL_ERROR "ddptrain needs nlohmann/json.hpp: on Debian, apt-get install "
    "nlohmann-json3-dev (share/dev/setup.sh installs it)")
endif()
# ICU's common library (Debian: libicu-dev): the Unicode categories of GPT-2's pre-tokenizer
# (src/data/bpe_tokenizer.cpp).
find_package(ICU COMPONENTS uc)
if(NOT ICU_FOUND)
  message(FATAL_ERROR "ddptrain needs ICU (unicode/uchar.h, libicuuc): on Debian, apt-get install "
    "libicu-dev (share/dev/setup.sh installs it)")
endif()
# The CPU GEMM of ddptrain's own kernels (src/models/cpu_gemm.cpp: the built-in models' linear
# layers, the GPT's fused attention): oneDNN's sgemm where it runs AVX-512 kernels (Debian:
# libdnnl-dev; LibTorch already loads libdnnl for its convolutions), else sgemm_ of the BLAS that
# LibTorch runs on (Debian: libblas.so.3, OpenBLAS through the alternatives); decided at run time.
# Optional: without either, those layers use LibTorch's tensor operations. oneDNN is found by
# header and library rather than by dnnl-config.cmake, which asks for OpenCL.
find_path(DDPTRAIN_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(DDPTRAIN_ONEDNN_LIBRARY NAMES dnnl)
# The directory to add to a file's include path: none where it is the compiler's own (Debian:
# /usr/include), since -I/usr/include puts it before the C++ library's wrappers, whose
# `#include_next <stdlib.h>` then finds nothing.
set(DDPTRAIN_ONEDNN_INCLUDE_DIRS ${DDPTRAIN_ONEDNN_INCLUDE_DIR})
if(DDPTRAIN_ONEDNN_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
  set(DDPTRAIN_ONEDNN_INCLUDE_DIRS "")
endif()
find_package(BLAS QUIET)
if(DDPTRAIN_ONEDNN_INCLUDE_DIR AND DDPTRAIN_ONEDNN_LIBRARY AND DDPTRAIN_WITH_ONEDNN)
  set(DDPTRAIN_HAVE_ONEDNN ON)
  message(STATUS "ddptrain: CPU GEMM: oneDNN ${DDPTRAIN_ONEDNN_LIBRARY} on AVX-512, else BLAS")
elseif(BLAS_FOUND)
  set(DDPTRAIN_HAVE_ONEDNN OFF)
  message(STATUS "ddptrain: CPU GEMM: BLAS ${BLAS_LIBRARIES} (no oneDNN found)")
else()
  set(DDPTRAIN_HAVE_ONEDNN OFF)
  message(STATUS "ddptrain: no oneDNN or BLAS found: the built-in models use tensor operations")
endif()

# --- CUDA Toolkit + NCCL (optional) -------------------------------------------------------------
set(DDPTRAIN_HAVE_NCCL OFF)
if(NOT DDPTRAIN_WITH_NCCL STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(DDPTRAIN_NCCL_INCLUDE_DIR nccl.h
      HINTS ENV NCCL_HOME ENV NCCL_ROOT ${CUDAToolkit_INCLUDE_DIRS}
      PATH_SUFFIXES include)
    find_library(DDPTRAIN_NCCL_LIBRARY nccl
      HINTS ENV NCCL_HOME ENV NCCL_ROOT ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
      PATH_SUFFIXES lib lib64)
  endif()
  if(CUDAToolkit_FOUND AND DDPTRAIN_NCCL_INCLUDE_DIR AND DDPTRAIN_NCCL_LIBRARY)
    set(DDPTRAIN_HAVE_NCCL ON)
    add_library(ddptrain::nccl UNKNOWN IMPORTED)
    set_target_properties(ddptrain::nccl PROPERTIES
      IMPORTED_LOCATION "${DDPTRAIN_NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${DDPTRAIN_NCCL_INCLUDE_DIR}")
    message(STATUS "ddptrain: NCCL backend ON (${DDPTRAIN_NCCL_LIBRARY}, CUDA ${CUDAToolkit_VERSION})")
  elseif(DDPTRAIN_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "DDPTRAIN_WITH_NCCL=ON but the CUDA Toolkit or NCCL was not found "
      "(set CUDAToolkit_ROOT and NCCL_HOME).")
  else()
    message(STATUS "ddptrain: NCCL backend OFF (CUDA Toolkit or NCCL not found)")
  endif()
endif()
