#!/usr/bin/env bash
# ddptrain generate with a TorchScript GPT (share/ddptrain/models/gpt.py, which exports a cached
# step: make_cache and decode) trained a few steps here:
#  - the cached step is taken (the log says so), and its greedy tokens, /finish and
#    log-probabilities are PyTorch's whole-window generation's (generate_reference.py) on 60
#    prompts of 1 to 26 tokens, at 2 ranks;
#  - sampled tokens through the cache (with stop tokens, so that rows leave it) equal those of the
#    whole window (ddp.zero = 3 at 2 ranks: the sharded model runs every forward in lockstep,
#    without a cache), log-probabilities within 1e-5.
# Usage: generate_torchscript.sh MPIEXEC DDPTRAIN DECK (the deck is unused).
# DDPTRAIN_PYTHON: a Python with torch and h5py (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
ts_deck=$repo/inputs/torchscript.cfg
"$python" "$repo/share/ddptrain/models/gpt.py" --output "$work/gpt.pt" --vocab 256 --block 32 \
  --n-layer 2 --n-head 4 --n-embd 64 --seed 3 >/dev/null
"$ddptrain" make-data tokens --output "$work/tokens.h5" --tokens 20000 --vocab 256 --seed 3 \
  >/dev/null
deck=("$ts_deck" --data.path="$work/tokens.h5" --data.block=32 --model.path="$work/gpt.pt"
  --train.threads=1)
"$ddptrain" train "${deck[@]}" --run.dir="$work/run" --train.steps=20 --checkpoint.every=20 \
  --eval.every=0 >"$work/train.txt" 2>&1 || { cat "$work/train.txt"; fail "training exited with $?"; }
checkpoint=$work/run/checkpoints/step_00000020.h5
"$python" - "$work/prompts.h5" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(5)
lengths = rng.integers(1, 27, 60)
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = rng.integers(0, 256, lengths.sum()).astype(np.int64)
    f["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
PY
generate() {  # NAME [OPTION...]: 2 ranks
  local name=$1
  shift
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" generate "${deck[@]}" --checkpoint "$checkpoint" \
    --input "$work/prompts.h5" --output "$work/$name.h5" --generate.max_new_tokens=12 \
    --generate.batch_size=4 "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "generate $name exited with $?"; }
}
sampling=(--generate.temperature=0.8 --generate.top_k=40 --generate.top_p=0.95)
generate greedy
grep -q "generate: each new token one position's forward (a cache of keys and values)" \
  "$work/greedy.txt" || fail "the TorchScript model's cached step was not taken: $(cat "$work/greedy.txt")"
"$python" "$repo/tests/e2e/generate_reference.py" "$checkpoint" "$work/prompts.h5" \
  "$work/greedy.h5" 256 32 2 4 64 12 || fail "the cached step's greedy tokens differ from PyTorch's"
# Stop tokens end some rows early, so that the rows that go on move to the front of the cache:
# the 4 tokens sampled most often.
generate sampled_free "${sampling[@]}"
stop=$("$python" -c "import h5py,sys,numpy as np; c=np.bincount(h5py.File(sys.argv[1])['tokens'][()]); print(','.join(map(str, np.argsort(-c, kind='stable')[:4])))" "$work/sampled_free.h5")
generate sampled "${sampling[@]}" --generate.stop="$stop"
generate sampled_window "${sampling[@]}" --generate.stop="$stop" --ddp.zero=3
grep -q "generate: the whole window's forward for each new token (no cache)" \
  "$work/sampled_window.txt" || fail "ZeRO-3 did not run the whole window"
"$python" - "$work/sampled.h5" "$work/sampled_window.h5" <<'PY' ||
import sys, h5py, numpy as np
cached, window = (h5py.File(p, "r") for p in sys.argv[1:3])
for name in ("tokens", "offsets", "finish"):
    assert np.array_equal(cached[name][()], window[name][()]), name
assert (cached["finish"][()] == 1).sum() >= 5, "too few rows ended by a stop token"
worst = np.max(np.abs(cached["logprobs"][()] - window["logprobs"][()]))
assert worst <= 1e-5, f"log-probabilities differ by {worst}"
print(f"sampled: the cached step's tokens are the whole window's (log-probabilities within {worst:.1e})")
PY
  fail "sampled tokens through the cache differ from the whole window's"
echo "generate with a TorchScript cached step: checks passed"
