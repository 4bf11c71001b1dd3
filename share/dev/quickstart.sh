#!/usr/bin/env bash
# Sets up what a training run needs (share/dev/setup.sh --run-only: the packages that building
# needs, then ddptrain and its HDF5 probe only), then trains inputs/quickstart.cfg on 2 CPU ranks.
# Extra arguments go to ddptrain (e.g. --train.steps=300).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DDPTRAIN_BUILD_DIR:-$repo/build}
"$repo/share/dev/setup.sh" --run-only

# Open MPI refuses to start as root unless told it is intended (containers, CI machines).
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cd "$repo"
echo "== mpirun -np 2 ddptrain train inputs/quickstart.cfg"
mpirun -np 2 --oversubscribe "$build/bin/ddptrain" train inputs/quickstart.cfg "$@"
