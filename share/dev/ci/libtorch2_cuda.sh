#!/usr/bin/env bash
# CI leg: the GPU code compiles and links. Inside the Debian 13 root for CUDA
# (share/dev/ci/debian13.sh cuda): LibTorch 2.6 built with CUDA (libtorch-cuda-dev), CUDA
# 12.4, NCCL 2.22, Open MPI 5, HDF5 1.14. Builds what a GPU machine runs (ddptrain, its HDF5
# probe, the MPI tests with the NCCL ones, the CUDA watchdog probe: share/dev/gpu/build_and_test.sh
# builds the same) into build/debian13-cuda with DDPTRAIN_WITH_NCCL=ON and LibTorch's CUDA code
# paths on (DDPTRAIN_TORCH_CUDA: c10_cuda found), then checks that the executable really is the
# CUDA build. The unit tests and benchmarks hold no CUDA code: the LibTorch 2.6 CPU leg compiles
# them against the same LibTorch. Nothing runs on a GPU (this machine has none).
#
# cuDNN: libtorch_cuda.so needs libcudnn.so.9, which Debian ships only as an installer package
# (nvidia-cudnn) that downloads it from NVIDIA; debian13.sh declines its license, so the library
# is absent here. The executables are linked with --allow-shlib-undefined: symbols that LibTorch's
# own libraries take from cuDNN stay unresolved until run time on a GPU machine (where cuDNN is
# installed with LibTorch), while every symbol ddptrain's own code references must still resolve.
# ddptrain calls no cuDNN function itself (the check below makes sure of that). For the same
# reason no executable can start here; nothing needs to (the unit tests' suites are listed when
# ctest runs, tests/cmake/GtestSuites.cmake).
# Usage: share/dev/ci/libtorch2_cuda.sh [--packages-only]   (as root; --packages-only: make the
#        root and install its packages, build nothing)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
if [[ ${1:-} != --inside ]]; then
  exec bash "$repo/share/dev/ci/debian13.sh" cuda bash "$repo/share/dev/ci/libtorch2_cuda.sh" \
    --inside "$@"
fi
shift
packages_only=()
[[ ${1:-} == --packages-only ]] && packages_only=(--packages-only)

build=$repo/build/debian13-cuda
DDPTRAIN_BUILD_DIR=$build DDPTRAIN_EXTRA_PACKAGES="libtorch-cuda-dev nvidia-cuda-toolkit libnccl-dev" \
  DDPTRAIN_TARGETS="ddptrain ddptrain-h5probe ddptrain_mpi_tests ddptrain_watchdog_cuda_probe" \
  DDPTRAIN_CMAKE_ARGS="-DDDPTRAIN_WITH_NCCL=ON -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined" \
  bash "$repo/share/dev/setup.sh" --build-only "${packages_only[@]}"
((${#packages_only[@]} == 0)) || exit 0

# The build is the one meant: CUDA LibTorch and NCCL compiled in, and linked.
for define in DDPTRAIN_TORCH_CUDA=1 DDPTRAIN_HAVE_NCCL=1; do
  grep -q -- "-D$define" "$build/compile_commands.json" ||
    { echo "FAIL: nothing was compiled with -D$define (LibTorch's c10_cuda or NCCL not found)"; exit 1; }
done
needed=$(readelf -d "$build/bin/ddptrain" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
for lib in libnccl.so libtorch_cuda.so libc10_cuda.so libcudart.so; do
  grep -q "^$lib" <<<"$needed" || { echo "FAIL: bin/ddptrain does not link $lib"; exit 1; }
done
# What --allow-shlib-undefined lets through must be LibTorch's, not ours.
if nm -u --demangle "$build/src/libddptrain_core.a" 2>/dev/null | grep -qi cudnn; then
  echo "FAIL: ddptrain's own code references cuDNN, which this leg cannot link"
  exit 1
fi
version() { dpkg-query -W -f='${Version}' "$1"; }
echo "PASS: CUDA build (libtorch-cuda-dev $(version libtorch-cuda-dev), nvidia-cuda-toolkit" \
  "$(version nvidia-cuda-toolkit), libnccl-dev $(version libnccl-dev)) built and linked:" \
  "$(ls "$build/bin" | paste -sd' ')"
