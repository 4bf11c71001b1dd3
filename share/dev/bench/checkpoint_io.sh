#!/usr/bin/env bash
# Checkpoint write/read time of a ~100 MB model (+ AdamW state) at 1 and 2 ranks, against
# torch::save of the same tensors and a dd of the same byte count to the same disk, and the cost
# of one metrics.h5 row. Not a test: it prints figures. Build first (share/dev/setup.sh).
# Usage: share/dev/bench/checkpoint_io.sh [DIR]   (DIR on the disk to measure; default /tmp)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bench=${DDPTRAIN_BENCH:-$repo/build/bin/ddptrain_bench_checkpoint}
dir=${1:-/tmp}/ddptrain_checkpoint_bench.$$
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for np in 1 2; do
  mpirun -np "$np" --oversubscribe --bind-to none "$bench" "$dir"
done | tee /tmp/checkpoint_io.$$
mb=$(grep -oP 'checkpoint_mb=\K[0-9.]+' /tmp/checkpoint_io.$$ | head -1)
rm -f /tmp/checkpoint_io.$$
mkdir -p "$dir"
count=$(awk -v m="$mb" 'BEGIN { printf "%d", m + 0.5 }')
for mode in "" "conv=fsync"; do
  # shellcheck disable=SC2086
  out=$(dd if=/dev/zero of="$dir/dd.bin" bs=1M count="$count" $mode 2>&1 | tail -1)
  echo "dd ${count} MB ${mode:-(page cache)}: $out"
done
rm -rf "$dir"
