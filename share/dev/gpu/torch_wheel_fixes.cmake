# Included right after project() by share/dev/gpu/build_and_test.sh (CMAKE_PROJECT_INCLUDE), for a
# build against the LibTorch inside a PyTorch wheel. Some wheels' Caffe2 CMake config, when it
# does not find NVTX 3 beside the wheel, falls back to NVTX 2 (CUDA::nvToolsExt), which CUDA 12.9
# and later no longer ship: configure then fails with "the target was not found". The toolkit's
# NVTX 3 (header-only) stands in for it.
find_package(CUDAToolkit QUIET)
if(TARGET CUDA::nvtx3 AND NOT TARGET CUDA::nvToolsExt)
  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  set_property(TARGET CUDA::nvToolsExt PROPERTY INTERFACE_LINK_LIBRARIES CUDA::nvtx3)
endif()
