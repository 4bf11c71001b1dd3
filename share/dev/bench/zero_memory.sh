#!/usr/bin/env bash
# ZeRO's memory per rank on a CPU GPT whose parameters, gradients and AdamW state total about
# 1.6 GB (14 blocks of width 768, vocab 256: 99M parameters x 16 bytes), at 1, 2 and 4 ranks
# with ddp.zero = 0, 1, 2 and 3, in turns, REPEATS rounds (default 2). For each run: what rank 0
# held at the end, from the summary (parameters, gradients, optimizer state; ZeRO-3: the shards,
# and the largest unit gathered while it runs, printed beside), its share of the ZeRO-0 run's at
# the same rank count, and rank 0's peak resident memory (the summary's figure).
# With ZeRO on one node the ranks share one copy of the parameters (ZeRO-1 and 2; ZeRO-3 gathers
# its units into one: the banner says so), which the held figure still counts whole per rank, and
# the peak counts too (the summary says how much of it is shared: the shared column). "3m" is
# ZeRO-3 with ddp.shared_memory = false: gathered through MPI, each rank's own memory only; a "b"
# runs it with train.precision = bf16 ("3b", "3mb"), whose casts of a unit's weights live as the
# unit does (design.md, ZeRO-3). RANKS and RUNS (environment) narrow the turns, e.g.
# RANKS=4 RUNS="3 3b 3m 3mb".
# Prints medians over the rounds with their spread.
# Not a test: it prints figures. Build first (share/dev/setup.sh). About 20 s a run on 2 cores.
# Usage: [RANKS="1 2 4"] [RUNS="0 1 2 3 3m 3b 3mb"] share/dev/bench/zero_memory.sh [REPEATS]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
repeats=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
results=$work/results.txt
for ((round = 1; round <= repeats; round++)); do
  for ranks in ${RANKS:-1 2 4}; do
    for zero in ${RUNS:-0 1 2 3 3m 3b 3mb}; do
      shared=true
      [[ $zero == *m* ]] && shared=false
      precision=fp32
      [[ $zero == *b* ]] && precision=bf16
      mpirun -np "$ranks" --oversubscribe --bind-to none "$ddptrain" train \
        "$repo/inputs/gpt_tokens.cfg" --run.dir="$work/run" --data.samples=512 \
        --model.n_layer=14 --model.n_embd=768 --model.n_head=12 --train.batch_size=1 \
        --train.steps=2 --eval.every=0 --log.every=1 --log.progress=lines --ddp.zero="${zero:0:1}" \
        --ddp.shared_memory="$shared" --train.precision="$precision" \
        >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
      echo "$round $ranks $zero $(grep -E "^  (memory|optimizer state) +:" "$work/log" | tr '\n' ' ')" \
        >>"$results"
      tail -1 "$results"
    done
  done
done
python3 - "$results" <<'PY'
import re, statistics, sys
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
def size(text):
    value, unit = text.split()
    return float(value) * units[unit]
runs = {}
for line in open(sys.argv[1]):
    round_, ranks, zero, rest = line.split(" ", 3)
    params = size(re.search(r"parameters ([\d.]+ \w+)", rest).group(1))
    grads = size(re.search(r"gradients ([\d.]+ \w+)", rest).group(1))
    state = size(re.search(r"optimizer state +: ([\d.]+ \w+)", rest).group(1))
    peak = size(re.search(r"peak ([\d.]+ \w+) resident", rest).group(1))
    unit = re.search(r"largest unit gathered ([\d.]+ \w+)", rest)
    unit = size(unit.group(1)) if unit else 0
    shared = re.search(r"([\d.]+ \w+) of it in memory the node's ranks share", rest)
    shared = size(shared.group(1)) if shared else 0
    runs.setdefault((int(ranks), zero), []).append((params + grads + state, peak, unit, shared))
print("ranks  ddp.zero  held by rank 0 (MiB)  share of ZeRO-0  largest unit (MiB)  "
      "peak resident, rank 0 (MiB)  of it shared (MiB)")
for (ranks, zero), values in sorted(runs.items()):
    held = statistics.median(v[0] for v in values) / 2**20
    # No ZeRO-0 run at this rank count (RUNS left it out): no share to print.
    base = runs.get((ranks, "0"))
    share = f"{held / (statistics.median(v[0] for v in base) / 2**20):15.2f}" if base else f"{'-':>15s}"
    peaks = [v[1] / 2**20 for v in values]
    unit = statistics.median(v[2] for v in values) / 2**20
    shared = statistics.median(v[3] for v in values) / 2**20
    print(f"{ranks:5d}  {zero:>8s}  {held:20.0f}  {share}  {unit:18.0f}  "
          f"{statistics.median(peaks):.0f} ({min(peaks):.0f}-{max(peaks):.0f}){shared:21.0f}")
PY
