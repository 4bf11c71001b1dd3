#!/usr/bin/env bash
# CI leg: the second stack on CPU, and the build a machine without the CUDA Toolkit gets. Inside
# the Debian 13 root (share/dev/ci/debian13.sh cpu): LibTorch 2.6 (CPU), Open MPI 5, HDF5 1.14,
# GCC 14, configured with DDPTRAIN_WITH_NCCL=OFF; set up, build into build/debian13-cpu, check
# that no NCCL test is registered (their gtest filter would match nothing and fail), and run the
# whole suite there with check.sh (every label that can run without a GPU).
# (share/dev/ci/without_nccl.sh makes the same NCCL-free build on Debian 12, by hand.)
# Usage: share/dev/ci/libtorch2_cpu.sh [ctest arguments...]   (as root)
#        share/dev/ci/libtorch2_cpu.sh --build-only      set up and build, run nothing
#        share/dev/ci/libtorch2_cpu.sh --packages-only   make the root and install its packages
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
if [[ ${1:-} != --inside ]]; then
  exec bash "$repo/share/dev/ci/debian13.sh" cpu bash "$repo/share/dev/ci/libtorch2_cpu.sh" \
    --inside "$@"
fi
shift
export DDPTRAIN_BUILD_DIR=$repo/build/debian13-cpu
# The benchmarks are compiled by the Debian 12 leg; nothing in them depends on the stack.
export DDPTRAIN_CMAKE_ARGS="-DDDPTRAIN_WITH_NCCL=OFF -DDDPTRAIN_BUILD_BENCHMARKS=OFF"
if [[ ${1:-} == --packages-only ]]; then
  exec bash "$repo/share/dev/setup.sh" --packages-only
fi
bash "$repo/share/dev/setup.sh"
[[ ${1:-} == --build-only ]] && exit 0
if ctest --test-dir "$DDPTRAIN_BUILD_DIR" -N | grep -E "Test +#[0-9]+: .*nccl"; then
  echo "FAIL: NCCL tests are registered in a build without NCCL"
  exit 1
fi
exec bash "$repo/share/dev/check.sh" "$@"
