#!/usr/bin/env bash
# model.init's import of GPT-2 124M's published layout (a safetensors file of random float32
# weights, make_gpt2_safetensors.py: 475 MiB, 148 tensors, 48 of them Conv1D weights stored
# [in, out] that are transposed on the way in) against reading the same file with dd, in the
# same run: from the page cache (ROUNDS rounds, dd and ddptrain in turns) and, where
# /proc/sys/vm/drop_caches can be written, from the disk (ROUNDS rounds, the cache dropped before
# each read). The import at one rank, on one thread (OMP_NUM_THREADS=1: a rank per core) and on every
# core of the machine (a rank alone on its node; not bound to a core, which mpirun does by
# default for 1 or 2 ranks). Then the bytes each rank read at 1 to 4 ranks, without ZeRO (every
# rank reads the whole file itself) and with ddp.zero = 3 (each rank its own slices; one rank has
# nothing to shard).
# Prints figures; asserts nothing.
#   share/dev/bench/import_speed.sh [ROUNDS] [DDPTRAIN]     (defaults: 3, build/bin/ddptrain)
set -euo pipefail
rounds=${1:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=$(realpath "${2:-$repo/build/bin/ddptrain}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file=$work/gpt2.safetensors
/usr/bin/python3 "$repo/share/dev/bench/make_gpt2_safetensors.py" "$file"
sync  # the file written back to the disk before anything is timed
bytes=$(stat -c %s "$file")
# GPT-2 small's shapes on the gpt_tokens deck's synthetic data (the vocabulary padded to 50304).
gpt2=(--model.n_layer=12 --model.n_head=12 --model.n_embd=768 --model.vocab=50304
  --model.block=1024 --model.init="$file" --train.steps=1 --log.every=1)

# RANKS [MPIRUN_OPTION...] [DECK_OPTION...]: the weights lines of one run (rank 0's output); the
# deck's options are those with a dot (--ddp.zero=3).
import_line() {
  local ranks=$1 launch=()
  shift
  while [[ $# -gt 0 && $1 != --*.* ]]; do launch+=("$1") && shift; done
  mpirun -np "$ranks" --oversubscribe "${launch[@]}" "$ddptrain" train \
    "$repo/inputs/gpt_tokens.cfg" "${gpt2[@]}" --train.global_batch="$ranks" --run.dir="$work/run" \
    "$@" 2>&1 | grep -E "^weights|error" || true
}
mib_per_s() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / s / 1048576 }'; }
dd_seconds() {
  dd if="$file" of=/dev/null bs=16M 2>&1 | sed -n 's/.* copied, \([0-9.e-]*\) s.*/\1/p'
}
ddptrain_seconds() {  # THREADS: the 1-rank import's time
  OMP_NUM_THREADS=$1 import_line 1 --bind-to none -x OMP_NUM_THREADS |
    sed -n 's/^weights: .* in \([0-9.e-]*\) s .*/\1/p'
}
drop_cache() { sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }

cores=$(nproc --all)
ratio() { awk -v d="$1" -v t="$2" 'BEGIN { printf "%.3f", d / t }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
row() {  # LABEL DD_S ONE_THREAD_S ALL_CORES_S
  printf '%-16s %9s %11s %7s %11s %7s\n' "$1" "$(mib_per_s "$bytes" "$2")" \
    "$(mib_per_s "$bytes" "$3")" "$(ratio "$2" "$3")" "$(mib_per_s "$bytes" "$4")" "$(ratio "$2" "$4")"
}

# COLD COMMAND...: COMMAND, the page cache dropped first where COLD is 1.
read_from() {
  local cold=$1
  shift
  if ((cold)); then drop_cache; fi
  "$@"
}
# LABEL COLD: ROUNDS rounds of dd and the import at 1 thread and at every core, in turns.
timed_rounds() {
  local label=$1 cold=$2 one=() all=() d t1 tn r
  for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then
      d=$(read_from "$cold" dd_seconds)
      t1=$(read_from "$cold" ddptrain_seconds 1)
      tn=$(read_from "$cold" ddptrain_seconds "$cores")
    else
      tn=$(read_from "$cold" ddptrain_seconds "$cores")
      t1=$(read_from "$cold" ddptrain_seconds 1)
      d=$(read_from "$cold" dd_seconds)
    fi
    one+=("$(ratio "$d" "$t1")") all+=("$(ratio "$d" "$tn")")
    row "$label $r" "$d" "$t1" "$tn"
  done
  echo "$label: import / dd median $(printf '%s\n' "${one[@]}" | median) on 1 thread," \
    "$(printf '%s\n' "${all[@]}" | median) on $cores"
}

echo "== $(basename "$file"): $bytes bytes; ddptrain $ddptrain; $cores cores"
printf '%-16s %9s %11s %7s %11s %7s\n' "MiB/s" "dd" "1 thread" "ratio" "$cores threads" "ratio"
dd_seconds >/dev/null  # the file into the page cache
timed_rounds "page cache" 0
if drop_cache; then
  timed_rounds "from the disk" 1
else
  echo "from the disk: not measured (/proc/sys/vm/drop_caches cannot be written here)"
fi

echo "== bytes each rank read"
for zero in 0 3; do
  for ranks in 1 2 3 4; do
    echo "-- $ranks rank(s), ddp.zero = $zero"
    import_line "$ranks" --ddp.zero="$zero"
  done
done
