#!/usr/bin/env bash
# Generation on CPU ranks: `ddptrain generate` (the built-in GPT, KV cache) against PyTorch eager
# generation with a KV cache (pytorch_generate.py: gpt.py's GPT with the same checkpoint's weights,
# a cache allocated once per batch), greedy, the same prompts (ROWS of PROMPT_LEN random ids) and
# MAX_NEW new tokens each, one thread per rank. For each model shape and batch size (1 and 16) it
# prints tokens/s of:
#   ddptrain np1   one rank;                  pytorch 1     one PyTorch process;
#   ddptrain np2   mpirun -np 2;              ceiling       two 1-rank ddptrain processes side by
#                                                           side, each on half the prompts (total
#                                                           tokens / the slower one's seconds);
#   pytorch 2      two PyTorch processes side by side on the halves (likewise).
# and the ratios ddptrain/PyTorch at 1 rank and np2/ceiling. Both sides time the generation only
# (ddptrain's summary line: the batches and the kept progress, not the write; PyTorch: its
# batches), not the loading. The two sides' tokens are compared (a count of equal tokens is
# printed: the same work is timed). Configurations run in turn, REPEATS times; each figure is the
# median, with the range.
# Shapes: small = inputs/gpt_tokens.cfg's model (4 layers, 4 heads, 64 wide, vocabulary 256,
# context 32); gpt2 = GPT-2 124M's (12 layers, 12 heads, 768 wide, vocabulary 50257, context 1024),
# random weights (one training step).
# Not a test: it prints figures (issue 61's goals: small >= 2x PyTorch at batch 1 and 1.3x at 16,
# GPT-2 >= 1.1x at both, np2 >= 0.9 of the ceiling).
# Usage: share/dev/bench/generate_speed.sh [REPEATS] [SHAPES]   (defaults 3, "small gpt2";
#        build first: share/dev/setup.sh)
# Environment (defaults): DDPTRAIN (build/bin/ddptrain); per shape SMALL_ROWS (1024),
#   SMALL_PROMPT_LEN (8), SMALL_MAX_NEW (24), GPT2_ROWS (32), GPT2_PROMPT_LEN (16),
#   GPT2_MAX_NEW (32).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
python=/usr/bin/python3 # Debian's Python has torch 1.13 and h5py
repeats=${1:-3}
read -r -a shapes <<<"${2:-small gpt2}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
launch=(mpirun --oversubscribe --bind-to none)
# shellcheck source=share/dev/bench/pytorch_malloc.sh
source "$repo/share/dev/bench/pytorch_malloc.sh"

# shape_of NAME: sets vocab context layers heads embd rows prompt_len max_new.
shape_of() {
  case $1 in
    small)
      vocab=256 context=32 layers=4 heads=4 embd=64
      rows=${SMALL_ROWS:-1024} prompt_len=${SMALL_PROMPT_LEN:-8} max_new=${SMALL_MAX_NEW:-24}
      ;;
    gpt2)
      vocab=50257 context=1024 layers=12 heads=12 embd=768
      rows=${GPT2_ROWS:-32} prompt_len=${GPT2_PROMPT_LEN:-16} max_new=${GPT2_MAX_NEW:-32}
      ;;
    *) echo "unknown shape $1 (small, gpt2)" >&2; exit 2 ;;
  esac
}

# prepare NAME: a checkpoint of the shape (one training step) and its prompts file.
prepare() {
  local dir=$tmp/$1
  mkdir -p "$dir"
  "$ddptrain" make-data tokens --output "$dir/tokens.h5" --tokens $((4 * context + 64)) \
    --vocab "$vocab" --seed 1 >/dev/null
  deck=("$repo/inputs/gpt_tokens.cfg" --data.type=tokens --data.path="$dir/tokens.h5"
    --data.block="$context" --data.val_fraction=0 --model.n_layer="$layers" --model.n_head="$heads"
    --model.n_embd="$embd" --train.threads=1)
  "$ddptrain" train "${deck[@]}" --run.dir="$dir/run" --train.steps=1 --train.global_batch=1 \
    --eval.every=0 --checkpoint.every=1 >"$dir/train.txt" 2>&1 ||
    { cat "$dir/train.txt"; exit 1; }
  checkpoint=$dir/run/checkpoints/latest
  "$python" - "$dir/prompts.h5" "$rows" "$prompt_len" "$vocab" <<'PY'
import sys, h5py, numpy as np
path, rows, length, vocab = sys.argv[1], *map(int, sys.argv[2:])
with h5py.File(path, "w") as f:
    f["tokens"] = np.random.default_rng(7).integers(0, vocab, rows * length).astype(np.int32)
    f["offsets"] = np.arange(0, rows * length + 1, length, dtype=np.int64)
PY
}

# ddptrain_rate OUT.txt: the tokens and seconds of ddptrain's summary line.
summary() {
  sed -n 's/.* \([0-9]*\) new tokens in \([0-9.]*\) s .*/\1 \2/p' "$1"
}
# PyTorch's: "pytorch: R rows, T new tokens in S s (...)".
pytorch_summary() {
  sed -n 's/^pytorch: .* \([0-9]*\) new tokens in \([0-9.]*\) s .*/\1 \2/p' "$1"
}
# rate "T1 S1" ["T2 S2" ...]: total tokens / the slowest one's seconds.
rate() {
  printf '%s\n' "$@" | awk '{t += $1; if ($2 > s) s = $2} END {printf "%.1f", t / s}'
}

run_ddptrain() { # NP BATCH OUT.h5 [--generate flags]: prints "T S"
  local np=$1 batch=$2 out=$3
  "${launch[@]}" -np "$np" "$ddptrain" generate "${deck[@]}" --checkpoint "$checkpoint" \
    --input "${4:-$tmp/$shape/prompts.h5}" --output "$out" --generate.max_new_tokens="$max_new" \
    --generate.batch_size="$batch" >"$out.txt" 2>&1 || { cat "$out.txt" >&2; exit 1; }
  summary "$out.txt"
}
run_pytorch() { # BATCH ROWS OUT.npy: prints "T S"
  "${launch[@]}" "${pytorch_malloc[@]}" -np 1 "$python" "$repo/share/dev/bench/pytorch_generate.py" \
    "$checkpoint" "$tmp/$shape/prompts.h5" "$vocab" "$context" "$layers" "$heads" "$embd" \
    "$max_new" "$1" --rows "$2" --output "$3" >"$3.txt" 2>&1 || { cat "$3.txt" >&2; exit 1; }
  pytorch_summary "$3.txt"
}
# halves: the prompts file split in two row ranges (the ceiling's 1-rank runs).
split_prompts() {
  "$python" - "$tmp/$shape/prompts.h5" "$tmp/$shape/half" <<'PY'
import sys, h5py, numpy as np
source, stem = sys.argv[1:3]
with h5py.File(source, "r") as f:
    tokens, offsets = f["tokens"][()], f["offsets"][()]
rows = len(offsets) - 1
for part, (a, b) in enumerate(((0, rows // 2), (rows // 2, rows))):
    with h5py.File(f"{stem}{part}.h5", "w") as f:
        f["tokens"] = tokens[offsets[a]:offsets[b]]
        f["offsets"] = offsets[a:b + 1] - offsets[a]
PY
}

same_tokens() { # DDPTRAIN.h5 PYTORCH.npy: "equal of total"
  "$python" - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    ours = f["tokens"][()].astype(np.int64)
theirs = np.load(sys.argv[2])
print(f"{int((ours == theirs).sum()) if ours.shape == theirs.shape else 0} of {theirs.size}")
PY
}

median_range() { # values...: "median [min-max]"
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%8.0f [%.0f-%.0f]", m, v[1], v[NR]}'
}

echo "== generate_speed.sh: $repeats repeats, one thread per rank, $(nproc --all) cores, $(date -u +%F)"
for shape in "${shapes[@]}"; do
  shape_of "$shape"
  prepare "$shape"
  split_prompts
  half=$((rows / 2))
  echo "-- $shape: $layers layers, $heads heads, $embd wide, vocabulary $vocab, context $context;" \
    "$rows prompts of $prompt_len tokens, $max_new new each, greedy"
  for batch in 1 16; do
    declare -a d1=() p1=() d2=() ceil=() p2=()
    for ((r = 0; r < repeats; r++)); do
      run_ddptrain 1 "$batch" "$tmp/d1.h5" >"$tmp/d1.rate"
      run_pytorch "$batch" "0:$rows" "$tmp/p1.npy" >"$tmp/p1.rate"
      run_ddptrain 2 "$batch" "$tmp/d2.h5" >"$tmp/d2.rate"
      run_ddptrain 1 "$batch" "$tmp/c0.h5" "$tmp/$shape/half0.h5" >"$tmp/c0.rate" &
      run_ddptrain 1 "$batch" "$tmp/c1.h5" "$tmp/$shape/half1.h5" >"$tmp/c1.rate"
      wait $!
      run_pytorch "$batch" "0:$half" "$tmp/q0.npy" >"$tmp/q0.rate" &
      run_pytorch "$batch" "$half:$rows" "$tmp/q1.npy" >"$tmp/q1.rate"
      wait $!
      d1+=("$(rate "$(cat "$tmp/d1.rate")")")
      p1+=("$(rate "$(cat "$tmp/p1.rate")")")
      d2+=("$(rate "$(cat "$tmp/d2.rate")")")
      ceil+=("$(rate "$(cat "$tmp/c0.rate")" "$(cat "$tmp/c1.rate")")")
      p2+=("$(rate "$(cat "$tmp/q0.rate")" "$(cat "$tmp/q1.rate")")")
    done
    med() { median_range "$@" | awk '{print $1}'; }
    printf '   batch %2d tokens/s: ddptrain np1 %s  pytorch 1 %s  -> %.2fx\n' "$batch" \
      "$(median_range "${d1[@]}")" "$(median_range "${p1[@]}")" \
      "$(awk -v a="$(med "${d1[@]}")" -v b="$(med "${p1[@]}")" 'BEGIN {print a / b}')"
    printf '            ddptrain np2 %s  ceiling %s  -> %.2f of it;  pytorch 2 %s\n' \
      "$(median_range "${d2[@]}")" "$(median_range "${ceil[@]}")" \
      "$(awk -v a="$(med "${d2[@]}")" -v b="$(med "${ceil[@]}")" 'BEGIN {print a / b}')" \
      "$(median_range "${p2[@]}")"
    echo "            same tokens as PyTorch: $(same_tokens "$tmp/d1.h5" "$tmp/p1.npy") (np1)," \
      "$(same_tokens "$tmp/d2.h5" "$tmp/p1.npy") (np2)"
  done
done
