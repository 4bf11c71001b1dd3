#!/usr/bin/env bash
# What data.prefetch buys: the scaling MLP (mlp_scaling.cfg) trained from an HDF5 file written by
# `ddptrain make-data` (rows read from the file at every step, as users' data is), at 1 and 2 ranks,
# with batches read in the step (data.prefetch = 0) and by the prefetch thread (1), run in turn
# REPEATS times; each figure is the median of its repeats, with the spread (min..max). Also the
# ceiling for 2 ranks on this machine: two independent 1-rank processes side by side.
# data wait = metrics.h5 data_wait_s, the time a step waited for its batch (median over rows).
# Not a test: it prints figures. Run nothing else meanwhile.
# Usage: share/dev/bench/prefetch.sh [STEPS] [REPEATS]   (build first: share/dev/setup.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
steps=${1:-300}
repeats=${2:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ddptrain" make-data classification --output "$tmp/rows.h5" --samples 65536 --features 256 \
  --classes 10 --seed 1 >/dev/null
deck=(train "$repo/share/dev/bench/mlp_scaling.cfg" --data.type=hdf5 --data.path="$tmp/rows.h5"
      --train.steps="$steps" --log.every=50 --log.progress=lines)

# run NAME RANKS PREFETCH: prints "samples/s data_wait_ms"
run() {
  mpirun --oversubscribe --bind-to none -np "$2" "$ddptrain" "${deck[@]}" --data.prefetch="$3" \
    --run.dir="$tmp/$1" </dev/null >"$tmp/$1.txt"
  local rate
  rate=$(grep -oP '^  throughput +: \K[0-9.]+(?= samples/s)' "$tmp/$1.txt")
  /usr/bin/python3 - "$tmp/$1/metrics.h5" "$rate" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    wait = np.median(f["train/data_wait_s"][1:]) * 1e3  # the first row holds the warm-up
print(sys.argv[2], f"{wait:.3f}")
PY
}
# Two 1-rank jobs at once, each on its own; prints the sum of their samples/s.
side_by_side() {
  local a b
  run side_a 1 1 >"$tmp/a.out" & a=$!
  run side_b 1 1 >"$tmp/b.out" & b=$!
  wait $a $b
  awk '{ s += $1 } END { printf "%.1f 0\n", s }' "$tmp/a.out" "$tmp/b.out"
}

configs=(np1_p0 np1_p1 np2_p0 np2_p1 ceiling)
declare -A rates waits
for ((r = 1; r <= repeats; ++r)); do
  for c in "${configs[@]}"; do
    case $c in
      np1_p0) out=$(run "$c" 1 0) ;;
      np1_p1) out=$(run "$c" 1 1) ;;
      np2_p0) out=$(run "$c" 2 0) ;;
      np2_p1) out=$(run "$c" 2 1) ;;
      ceiling) out=$(side_by_side) ;;
    esac
    rates[$c]+=" ${out% *}"
    waits[$c]+=" ${out#* }"
  done
  echo "repeat $r:$(for c in "${configs[@]}"; do printf ' %s %s' "$c" "${rates[$c]##* }"; done)"
done

stats() {  # values -> "median min max"
  printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}
printf '\nMLP 256-1024x3-10 from an HDF5 file, AdamW, batch 64/rank, 1 thread/rank, %s steps, ' "$steps"
printf 'median (min..max) of %s, %s cores: %s\n' "$repeats" "$(nproc --all)" \
  "$(grep -m1 -oP 'model name\s*: \K.*' /proc/cpuinfo)"
printf '%-34s %24s %14s\n' configuration "samples/s" "data wait ms"
for c in "${configs[@]}"; do
  read -r rm rlo rhi <<<"$(stats "${rates[$c]}")"
  read -r wm _ _ <<<"$(stats "${waits[$c]}")"
  case $c in
    np1_p0) name="1 rank, data.prefetch = 0" ;;
    np1_p1) name="1 rank, data.prefetch = 1" ;;
    np2_p0) name="2 ranks, data.prefetch = 0" ;;
    np2_p1) name="2 ranks, data.prefetch = 1" ;;
    ceiling) name="ceiling: 2 x 1 rank side by side"; wm="-" ;;
  esac
  printf '%-34s %10.0f (%5.0f..%5.0f) %14s\n' "$name" "$rm" "$rlo" "$rhi" "$wm"
done
