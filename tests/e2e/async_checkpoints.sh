#!/usr/bin/env bash
# checkpoint.async = true writes the same checkpoints as false and trains the same: two 2-rank
# runs (plain, then ZeRO-1) with a checkpoint every 5 steps, each once synchronously and once in
# the background; their metrics.h5 losses are equal, and in every checkpoint each dataset is equal
# bit for bit and each attribute equal, except the resolved deck (`config`), which records
# checkpoint.async and run.dir. (That the same state makes the same file byte for byte whichever
# way it is written is Checkpoint.TheSameStateWrittenTwiceIsTheSameFile.) The asynchronous log
# says which writes went to the background. Then the training thread reads its batches and
# evaluation windows from HDF5 files (rows, token stream) while checkpoints are written: every
# HDF5 call holds the one HDF5 lock (a call without it aborts the run, h5/h5_lock.hpp).
# Usage: async_checkpoints.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
common=(--data.samples=2000 --train.steps=30 --checkpoint.every=5 --checkpoint.keep=10
        --log.every=1 --model.hidden=512,512)

train() {  # DIR OPTIONS...
  local dir=$1
  shift
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
    --run.dir="$work/$dir" "$@" >"$work/$dir.txt" 2>&1 || { cat "$work/$dir.txt"; fail "$dir"; }
}
for zero in 0 1; do
  train sync$zero --ddp.zero=$zero
  train async$zero --ddp.zero=$zero --checkpoint.async=true
  grep -q "writing in the background" "$work/async$zero.txt" || fail "no background write logged"
  grep -q "checkpoint written: .*step_00000030.h5 (in the background" "$work/async$zero.txt" ||
    fail "the run ended without reporting its last background write"
  files=$(cd "$work/sync$zero/checkpoints" && ls step_*.h5)
  [[ $(echo "$files" | wc -l) -eq 6 ]] || fail "expected 6 checkpoints: $files"
  for f in $files; do
    /usr/bin/python3 - "$work/sync$zero/checkpoints/$f" "$work/async$zero/checkpoints/$f" <<'PY' ||
import sys
import h5py
import numpy as np


def contents(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for key, value in obj.attrs.items():
                if (name, key) != ("/", "config"):
                    out[f"{name}@{key}"] = np.asarray(value).tobytes()
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.dtype.str, obj.shape, obj[()].tobytes())
        visit("/", f)
        f.visititems(visit)
    return out


a, b = (contents(p) for p in sys.argv[1:])
different = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
assert len(a) > 10 and not different, f"differ: {different}"
PY
      fail "ddp.zero=$zero: $f differs between synchronous and asynchronous writes"
  done
  [[ $(readlink "$work/async$zero/checkpoints/latest") == step_00000030.h5 ]] || fail "latest"
  /usr/bin/python3 - "$work/sync$zero/metrics.h5" "$work/async$zero/metrics.h5" <<'PY'
import sys
import h5py
a, b = (h5py.File(p, "r")["train/loss"][:].tolist() for p in sys.argv[1:])
assert len(a) == 30 and a == b, f"losses differ: {a} vs {b}"
PY
  echo "ddp.zero=$zero: 6 checkpoints with identical contents, 30 losses equal"
done

# HDF5 data files read by the training thread while the writer thread writes checkpoints.
"$ddptrain" make-data classification --output "$work/rows.h5" --samples 2000 --features 64 \
  --classes 10 >/dev/null || fail "make-data classification"
train rows --data.type=hdf5 --data.path="$work/rows.h5" --data.val_fraction=0.1 \
  --checkpoint.async=true --eval.every=5 \
  --checkpoint.keep_best=true
"$ddptrain" make-data tokens --output "$work/tokens.h5" --tokens 50000 --vocab 64 \
  --val-tokens 4096 >/dev/null || fail "make-data tokens"
deck=$(dirname "$0")/../../inputs/gpt_tokens.cfg
common=(--train.steps=30 --checkpoint.every=5 --checkpoint.keep=10 --log.every=1)
train tokens --data.type=tokens --data.path="$work/tokens.h5" --data.val_tokens=val_tokens \
  --data.vocab=64 --checkpoint.async=true --eval.every=5 --checkpoint.keep_best=true
for run in rows tokens; do
  [[ $(grep -c "checkpoint written: .*(in the background" "$work/$run.txt") -eq 6 ]] ||
    fail "$run: expected 6 background writes"
done
echo "data from HDF5 rows and token streams read while checkpoints are written: 2 x 6 writes"
