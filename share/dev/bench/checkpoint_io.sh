#!/usr/bin/env bash
# Checkpoint write/read time of a ~100 MB model (+ AdamW state) at 1 and 2 ranks, against
# torch::save of the same tensors and a plain write of the same bytes to the same disk (what
# dd bs=1M conv=fsync does, run by the bench itself in turns with the checkpoint, so that both
# find the page cache in the same state: see checkpoint_io.cpp), and the cost of one metrics.h5
# row. Not a test: it prints figures. Build first (share/dev/setup.sh).
# Usage: share/dev/bench/checkpoint_io.sh [DIR]   (DIR on the disk to measure; default /tmp)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bench=${DDPTRAIN_BENCH:-$repo/build/bin/ddptrain-bench}
dir=${1:-/tmp}/ddptrain_checkpoint_bench.$$
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for np in 1 2; do
  mpirun -np "$np" --oversubscribe --bind-to none "$bench" checkpoint "$dir"
done
