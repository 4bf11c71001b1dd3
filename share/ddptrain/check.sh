#!/usr/bin/env bash
# Sets everything up (share/ddptrain/setup.sh), then runs the whole test suite with ctest.
# Extra arguments go to ctest (e.g. -L mpi, -R equivalence).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DDPTRAIN_BUILD_DIR:-$repo/build}
"$repo/share/ddptrain/setup.sh"
echo "== ctest"
# -j1: MPI tests already use both cores of a small machine; running them side by side would
# oversubscribe further and only slow everything down.
ctest --test-dir "$build" --output-on-failure -j1 "$@"
