#!/usr/bin/env bash
# A TorchScript model whose output layer's weight is its embedding's (tied by assignment, one
# tensor held by two attributes: make_torchscript_tied.py) trains as PyTorch trains it. ddptrain
# at 1 rank, at 2 ranks, and at 2 ranks with ddp.zero = 1 (the parameters in node-shared memory)
# against PyTorch training the same TorchScript module on the same windows in the same order with
# the same AdamW (share/dev/bench/pytorch_ddp_gpt.py --scripted, one process, the global batch):
# the loss of every metrics row within 1e-5 (relative), and the tied weight counted once.
# ddptrain once listed the tied weight under both names and updated it twice per step: after 5
# steps its loss was 8.0026 against PyTorch's 8.1383.
# Usage: tied_weights_match_pytorch.sh MPIEXEC DDPTRAIN DECK (the deck is unused: the script
# writes its own). DDPTRAIN_PYTHON: a Python with torch and h5py (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
"$python" "$repo/tests/e2e/make_torchscript_tied.py" "$work/tied.pt" >"$work/make.txt" ||
  { cat "$work/make.txt"; fail "could not write the tied TorchScript model"; }
"$ddptrain" make-data tokens --output "$work/tokens.h5" --tokens 100000 --vocab 256 --seed 3 \
  >/dev/null
cat >"$work/tied.cfg" <<DECK
[run]
seed = 1
[data]
type = tokens
path = $work/tokens.h5
block = 16
[model]
type = torchscript
path = $work/tied.pt
[train]
steps = 20
threads = 1
[optim]
type = adamw
lr = 0.01
schedule = constant
weight_decay = 0.1
[log]
every = 5
DECK
train() {  # NAME RANKS BATCH_PER_RANK [OPTION...]
  local name=$1 ranks=$2 batch=$3
  shift 3
  "$mpiexec" -np "$ranks" --oversubscribe "$ddptrain" train "$work/tied.cfg" \
    --run.dir="$work/$name" --train.batch_size="$batch" "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "$name exited with $?"; }
}
train one_rank 1 16
train two_ranks 2 8
train two_ranks_zero1 2 8 --ddp.zero=1
grep -q "model .*(9248 parameters)" "$work/one_rank.txt" ||
  fail "the tied weight was not counted once: $(grep 'model  ' "$work/one_rank.txt")"
grep -q "ZeRO-1" "$work/two_ranks_zero1.txt" || fail "the ZeRO-1 run did not shard"
"$python" "$repo/share/dev/bench/pytorch_ddp_gpt.py" --model "$work/tied.pt" --scripted \
  --data "$work/tokens.h5" --block 16 --batch 16 --steps 20 --lr 0.01 --schedule constant \
  --weight-decay 0.1 --log-every 5 --seed 1 >"$work/pytorch.txt" 2>&1 ||
  { cat "$work/pytorch.txt"; fail "PyTorch exited with $?"; }
"$python" - "$work/pytorch.txt" "$work"/{one_rank,two_ranks,two_ranks_zero1}/metrics.h5 <<'PY'
import re
import sys

import h5py

reference = {int(m.group(1)): float(m.group(2))
             for m in re.finditer(r"^LOG step=(\d+) loss=(\S+)", open(sys.argv[1]).read(), re.M)}
assert sorted(reference) == [5, 10, 15, 20], f"PyTorch's rows: {reference}"
bad = 0
for path in sys.argv[2:]:
    with h5py.File(path, "r") as f:
        rows = dict(zip(f["train/step"][()].tolist(), f["train/loss"][()].tolist()))
    assert sorted(rows) == sorted(reference), f"{path}: rows {sorted(rows)}"
    for step, want in sorted(reference.items()):
        error = abs(rows[step] - want) / abs(want)
        print(f"{path.split('/')[-2]:16} step {step:2}: ddptrain {rows[step]:.6f}  "
              f"PyTorch {want:.6f}  relative difference {error:.1e}")
        bad += not error <= 1e-5  # written so that a NaN (either loss) counts as bad
sys.exit(1 if bad else 0)
PY
echo "ok: a weight tied by assignment trains as in PyTorch, at 1 and 2 ranks and with ZeRO-1"
