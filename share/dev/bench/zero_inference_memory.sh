#!/usr/bin/env bash
# eval's peak resident memory per rank with ddp.zero = 0 and 3, on zero_memory.sh's CPU GPT (14
# blocks of width 768, vocab 256: 99M parameters, 379 MiB of fp32 weights), at 4 ranks, in
# turns, REPEATS rounds (default 2). With ddp.zero = 3, eval and predict build the model without
# values and read each rank's shards from the checkpoint, so no rank holds it whole. ZeRO-3 runs
# twice: its units gathered in node-shared memory (the default on one node; a rank's resident set
# counts the shared pages it reads) and through MPI (ddp.shared_memory = false: each rank's own
# memory only). Beside them, a baseline: the same eval of a GPT of one block 64 wide (what a rank
# holds with next to no model). Peak: GNU time's maximum resident set, the largest over the 4
# ranks; medians over the rounds (min-max). The checkpoint comes from one SGD step at 1 rank.
# Not a test: it prints figures. Build first (share/dev/setup.sh); run nothing else meanwhile.
# Usage: share/dev/bench/zero_inference_memory.sh [REPEATS]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
repeats=${1:-2}
work=$(mktemp -d "$repo/build/bench-inference-XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
big=(--model.n_layer=14 --model.n_embd=768 --model.n_head=12)
tiny=(--model.n_layer=1 --model.n_embd=64 --model.n_head=4)
common=(--data.samples=512 --optim.type=sgd --optim.momentum=0 --train.batch_size=1
        --train.global_batch=0 --train.steps=1 --checkpoint.every=1 --eval.every=0
        --log.progress=lines)
for size in big tiny; do
  declare -n model=$size
  "$ddptrain" train "$repo/inputs/gpt_tokens.cfg" --run.dir="$work/$size" "${common[@]}" \
    "${model[@]}" >"$work/$size.txt" 2>&1 || { cat "$work/$size.txt"; exit 1; }
done
peak_mib() {  # NAME SIZE OPTIONS... -> the largest rank's maximum resident set, MiB
  local name=$1 size=$2
  shift 2
  mpirun -np 4 --oversubscribe --bind-to none /usr/bin/time -f 'maxrss_kib %M' "$ddptrain" eval \
    "$work/$size/config.cfg" --checkpoint "$work/$size/checkpoints/step_00000001.h5" \
    --eval.batch_size=1 "$@" >"$work/$name.txt" 2>&1 || { cat "$work/$name.txt" >&2; exit 1; }
  grep -oP 'maxrss_kib \K[0-9]+' "$work/$name.txt" | sort -n | tail -1 | awk '{print $1 / 1024}'
}
for ((r = 1; r <= repeats; ++r)); do
  runs=(base z0 z3 z3mpi)
  ((r % 2)) || runs=(z3mpi z3 z0 base)
  for run in "${runs[@]}"; do
    case $run in
      base) v=$(peak_mib base tiny --ddp.zero=0) ;;
      z0) v=$(peak_mib z0 big --ddp.zero=0) ;;
      z3) v=$(peak_mib z3 big --ddp.zero=3) ;;
      z3mpi) v=$(peak_mib z3mpi big --ddp.zero=3 --ddp.shared_memory=false) ;;
    esac
    declare "$run=$v"
  done
  echo "round $r: baseline $base, ZeRO-0 $z0, ZeRO-3 $z3, ZeRO-3 through MPI $z3mpi MiB"
  echo "$base $z0 $z3 $z3mpi" >>"$work/peaks.txt"
done
printf 'GPT 14 blocks x 768 wide, vocab 256 (99M parameters, 379 MiB); eval at 4 ranks; '
printf '%s rounds; %s cores, load %s\n' "$repeats" "$(nproc --all)" "$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/peaks.txt" <<'PY'
import statistics, sys
rows = [[float(v) for v in line.split()] for line in open(sys.argv[1])]
names = ["baseline (1 block x 64)", "ZeRO-0", "ZeRO-3 (node-shared gathers)", "ZeRO-3 (through MPI)"]
for i, name in enumerate(names):
    col = [r[i] for r in rows]
    print(f"{name:30s} peak {statistics.median(col):7.0f} MiB ({min(col):.0f}-{max(col):.0f}),"
          f" {statistics.median(col) - statistics.median([r[0] for r in rows]):6.0f} MiB over the baseline")
PY
