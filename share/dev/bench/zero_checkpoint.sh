#!/usr/bin/env bash
# Issue 17's figures for a ~105M-parameter MLP with AdamW (1024 -> 7 x 4096 -> 10, batch 8 per
# rank, one thread per rank) at 1, 2 and 4 ranks (oversubscribed on a 2-core machine):
#   - optimizer state bytes per rank, plain data parallel vs ZeRO-1 (ddp.zero = 1; target 1/N),
#   - median step time of the steps without a checkpoint, plain vs ZeRO-1,
#   - the training stall per checkpoint, checkpoint.async false vs true (target: async stall
#     under 10% of the synchronous write): the first checkpoint's (its host memory was allocated
#     in the background after the first step) and the median of the later ones (which reuse the
#     last one's), with the part of it spent waiting for the previous background write to end
#     (checkpoints due faster than a write takes); the write time; and the whole run's
#     wall time (the steps that overlap a background write run slower: the stall is not all),
#   - the synchronous write's bandwidth against dd of the same bytes with fsync on the same disk,
#     run right after that configuration (the disk's speed drifts from minute to minute: a dd at
#     the end alone measured 1.68 s one session and 2.43 s the next for the same 1259 MB). dd
#     runs twice, because on a VM that hands free memory back to its host (virtio-balloon free
#     page reporting) a write's time depends on where its page cache comes from: "fresh", a new
#     file written while the previous one is kept, as every checkpoint is (checkpoint.keep keeps
#     the previous file until the new one is complete), takes memory the host must provide again;
#     "recycled", one written right after a file was deleted, reuses that file's pages. On the
#     2-core VM: 1.74-3.41 s fresh against 0.50-0.55 s recycled for the same 1259 MB. The ratio
#     that compares like with like is the one against "fresh".
# Each configuration trains 30 steps with a checkpoint every 10 (3 checkpoints, the first after
# warm-up): at 4 oversubscribed ranks a background write takes about 10 steps, and a checkpoint
# due before the last one is written waits for it (at most one write in flight). Not a test: it prints figures. Run nothing else meanwhile.
# Usage: share/dev/bench/zero_checkpoint.sh [DIR] [RANKS...]  (DIR on the disk to measure,
# default /tmp; ranks default 1 2 4). Build first (share/dev/setup.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
dir=$(mktemp -d "${1:-/tmp}/ddptrain_zero_bench.XXXXXX")
shift || true
ranks=("$@")
[[ ${#ranks[@]} -gt 0 ]] || ranks=(1 2 4)
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
options=(--data.samples=4096 --data.features=1024 --data.classes=10
         --model.hidden=4096,4096,4096,4096,4096,4096,4096 --train.batch_size=8
         --train.steps=30 --train.threads=1 --checkpoint.every=10 --checkpoint.keep=1
         --log.every=1 --log.progress=lines)

# Seconds for dd to write MB megabytes with fsync into $dir/FILE.
dd_seconds() {
  local start
  start=$(date +%s.%N)
  dd if=/dev/zero of="$dir/$2" bs=1M count="$1" conv=fsync 2>/dev/null
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
}

# "FRESH RECYCLED": dd's seconds for MB megabytes written as a checkpoint is (a new file beside
# the previous one, some seconds after that was written), then into the pages of a file deleted
# just before (see the top of this file). It starts 20 s after the run, whose freed memory is
# otherwise still at hand: without that wait "fresh" took 0.51-1.23 s, with it 3.26-3.31 s.
dd_fresh_and_recycled() {
  local fresh recycled
  sleep 20
  dd_seconds "$1" previous.bin >/dev/null
  sleep 3
  fresh=$(dd_seconds "$1" new.bin)
  rm -f "$dir/previous.bin"
  recycled=$(dd_seconds "$1" recycled.bin)
  rm -f "$dir/new.bin" "$dir/recycled.bin"
  echo "$fresh $recycled"
}

echo "ranks zero async | state/rank | step ms | stall s: first, later (of it waiting for the last write) | write s | run s | file MB"
for np in "${ranks[@]}"; do
  for zero in 0 1; do
    for async in false true; do
      run=$dir/np${np}_z${zero}_${async}
      start=$(date +%s.%N)
      mpirun -np "$np" --oversubscribe --bind-to none "$ddptrain" train \
        "$repo/inputs/quickstart.cfg" "${options[@]}" --run.dir="$run" --ddp.zero="$zero" \
        --checkpoint.async="$async" </dev/null >"$run.txt" 2>&1 ||
        { tail -20 "$run.txt"; exit 1; }
      seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      /usr/bin/python3 - "$run" "$np" "$zero" "$async" "$seconds" <<'PY'
import re, statistics, sys, h5py, os
run, np, zero, is_async, seconds = sys.argv[1:]
log = open(run + ".txt").read()
state = re.search(r"optimizer state\s*: (\S+ \S+)", log).group(1)
# Each checkpoint's line ("(training stopped ..."), not the summary's ("; training stopped ...").
stopped = re.findall(r"\(training stopped ([0-9.]+) s(?:, ([0-9.]+) s of it for the previous write)?", log)
stalls = [float(s) for s, _ in stopped]
waited = [float(w or 0) for _, w in stopped]
writes = [float(s) for s in re.findall(r"write ([0-9.]+) s\)", log)]
writes += [float(s) for s in re.findall(r"in the background, ([0-9.]+) s\)", log)]
with h5py.File(run + "/metrics.h5", "r") as f:
    steps, times = f["train/step"][:], f["train/step_time_s"][:]
plain = [t for s, t in zip(steps, times) if s % 10 != 0 and s > 2]
size = os.path.getsize(run + "/checkpoints/step_00000030.h5") / 1e6
if is_async == "false":
    with open(os.path.dirname(run) + "/sync_writes", "a") as out:
        out.write(f"{np} {zero} {size} {statistics.median(writes)}\n")
print(f"{np:>5} {zero:>4} {is_async:>5} | {state:>10} | {statistics.median(plain) * 1e3:7.0f} | "
      f"{stalls[0]:8.3f}, {statistics.median(stalls[1:]):6.3f} ({statistics.median(waited[1:]):5.3f}) | "
      f"{statistics.median(writes):7.3f} | "
      f"{float(seconds):5.1f} | {size:7.0f}")
PY
      rm -rf "$run"
      if [[ $async == false ]]; then
        dd_fresh_and_recycled "$(awk 'END { print int($3 + 0.5) }' "$dir/sync_writes")" \
          >>"$dir/dd_times"
      fi
    done
  done
done

# Each synchronous write against the dd runs right after it.
paste -d' ' "$dir/sync_writes" "$dir/dd_times" | awk '{
  rate = $3 / $4
  printf "sync write, %d rank(s), ddp.zero=%d: %.0f MB in %.3f s = %.0f MB/s; dd fresh %.3f s: %.2fx dd; dd recycled %.3f s: %.2fx dd\n", $1, $2, $3, $4, rate, $5, $5 / $4, $6, $6 / $4 }'
for column in 1 2; do
  cut -d' ' -f"$column" "$dir/dd_times" | sort -n | awk -v kind="$([[ $column == 1 ]] && echo fresh || echo recycled)" '
    { t[NR] = $1 } END {
    printf "dd with fsync, %s pages, %d runs: median %.3f s (%.3f..%.3f)\n", kind, NR, t[int((NR + 1) / 2)], t[1], t[NR] }'
done
