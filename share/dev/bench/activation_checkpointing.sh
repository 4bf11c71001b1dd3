#!/usr/bin/env bash
# model.activation_checkpointing on the CPU GPT: peak resident memory (GNU time's maximum RSS) and
# steady throughput, off and on in turns, REPEATS times each (default 3), one rank. The GPT is
# sized so that activations dominate: 8 blocks of width 256 over 256-token windows, 16 windows a
# step (the weights and AdamW state are about 100 MB). Prints each run and the medians with their
# spread. Not a test: it prints figures. Build first (share/dev/setup.sh).
# Usage: share/dev/bench/activation_checkpointing.sh [REPEATS]   (about 15 s a run)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
repeats=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() {  # run on|off: prints "RSS_MIB TOKENS_PER_S"
  local flag=false
  [[ $1 == on ]] && flag=true
  /usr/bin/time -f "%M" -o "$work/rss" mpirun -np 1 --bind-to none "$ddptrain" train \
    "$repo/inputs/gpt_tokens.cfg" --run.dir="$work/run" --data.block=256 --data.samples=2048 \
    --model.n_layer=8 --model.n_embd=256 --model.n_head=8 --train.global_batch=16 \
    --train.steps=12 --eval.every=0 --log.every=4 --log.progress=lines \
    --model.activation_checkpointing=$flag >"$work/log" 2>&1
  local rate
  rate=$(grep -m1 "throughput" "$work/log" | sed -E 's/.*, ([0-9]+) tokens\/s.*/\1/')
  echo "$(($(cat "$work/rss") / 1024)) $rate"
}
declare -a off_rss on_rss off_rate on_rate
for ((i = 1; i <= repeats; i++)); do
  for mode in off on; do
    read -r rss rate < <(run "$mode")
    echo "round $i, activation checkpointing $mode: peak RSS $rss MiB, $rate tokens/s"
    if [[ $mode == off ]]; then off_rss+=("$rss"); off_rate+=("$rate"); else on_rss+=("$rss"); on_rate+=("$rate"); fi
  done
done
python3 - "${off_rss[*]}" "${on_rss[*]}" "${off_rate[*]}" "${on_rate[*]}" <<'PY'
import statistics, sys
off_rss, on_rss, off_rate, on_rate = ([float(x) for x in a.split()] for a in sys.argv[1:5])
def show(name, off, on, unit):
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"{name}: off {m_off:.0f} {unit} ({min(off):.0f}-{max(off):.0f}), on {m_on:.0f} {unit} "
          f"({min(on):.0f}-{max(on):.0f}); on/off {m_on / m_off:.3f}")
show("peak RSS", off_rss, on_rss, "MiB")
show("throughput", off_rate, on_rate, "tokens/s")
PY
