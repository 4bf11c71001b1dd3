#!/usr/bin/env bash
# Builds, without running a test, every tree that a CI leg builds (.ci/run): Debian 12's `build`
# (check.sh), Debian 13's `build/debian13-cpu` (libtorch2_cpu.sh) and `build/debian13-cuda`
# (libtorch2_cuda.sh, which is build-only anyway), making the Debian 13 roots first if they are
# missing. Why: the CI runs on a clean clone of this machine with 90 minutes, and it is fast only
# when ccache already holds the compiles (CCACHE_BASEDIR: a clone elsewhere hits the same
# entries). Cold, the three builds alone take longer than that: on 2026-11-28 the CI was killed
# at 5400 s in the CUDA leg's build, its root made and its packages installed in that run, after
# check.sh and the LibTorch 2.x CPU leg had taken about an hour. Run this after the last change
# to src/ or tests/ and before submitting.
# Usage: share/dev/ci/prebuild.sh   (as root)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
leg() {
  local start=$SECONDS
  echo "==== prebuild: $*"
  "$@"
  echo "==== prebuild done in $((SECONDS - start)) s: $*"
}
leg bash "$repo/share/dev/setup.sh"
leg bash "$repo/share/dev/ci/libtorch2_cpu.sh" --build-only
leg bash "$repo/share/dev/ci/libtorch2_cuda.sh"
