#!/usr/bin/env bash
# By hand (CI makes the NCCL-free build in its Debian 13 leg, share/dev/ci/libtorch2_cpu.sh): the
# build a machine without the CUDA Toolkit gets (a fresh Debian 12), made here on purpose with
# DDPTRAIN_WITH_NCCL=OFF in build/without-nccl, and the whole suite on it. No NCCL test may be
# registered in it (they would fail: their gtest filter matches nothing).
# Usage: share/dev/ci/without_nccl.sh [ctest arguments...]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export DDPTRAIN_BUILD_DIR=$repo/build/without-nccl
export DDPTRAIN_CMAKE_ARGS=-DDDPTRAIN_WITH_NCCL=OFF
"$repo/share/dev/setup.sh"
if ctest --test-dir "$DDPTRAIN_BUILD_DIR" -N | grep -E "Test +#[0-9]+: .*nccl"; then
  echo "FAIL: NCCL tests are registered in a build without NCCL"
  exit 1
fi
exec bash "$repo/share/dev/check.sh" "$@"
