#!/usr/bin/env bash
# CI leg: the second stack on CPU. Inside the Debian 13 root (share/dev/ci/debian13.sh cpu):
# LibTorch 2.6 (CPU), Open MPI 5, HDF5 1.14, GCC 14; set up, build into build/debian13-cpu and
# run the whole suite there with check.sh (every label that can run without a GPU).
# Usage: share/dev/ci/libtorch2_cpu.sh [ctest arguments...]   (as root)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export DDPTRAIN_BUILD_DIR=$repo/build/debian13-cpu
exec bash "$repo/share/dev/ci/debian13.sh" cpu bash share/dev/check.sh "$@"
