#!/usr/bin/env bash
# Datasets in from HDF5 files written by `ddptrain make-data`: a classification file trains exactly
# like the in-memory synthetic data it holds (the final checkpoints' parameters, buffers and
# optimizer state, and every logged loss, bit for bit, read with h5py); token streams and
# regression train and evaluate; files that do not fit are refused with exit 3, one line naming
# the file and the object, and nothing written.
# Usage: data_files.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
run2() { "$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" "$@"; }

small=(--train.steps=60 --log.every=10 --checkpoint.every=60 --data.samples=2048
       --data.features=16 --data.teacher_hidden=8 --data.classes=10)
"$ddptrain" make-data classification --output "$work/cls.h5" --samples 2048 --features 16 \
  --teacher-hidden 8 --classes 10 --seed 1234 >/dev/null || fail "make-data classification"
run2 train "$deck" "${small[@]}" --run.dir="$work/synthetic" >"$work/synthetic.txt" 2>&1 \
  || { cat "$work/synthetic.txt"; fail "synthetic run"; }
run2 train "$deck" "${small[@]}" --run.dir="$work/file" --data.type=hdf5 \
  --data.path="$work/cls.h5" >"$work/file.txt" 2>&1 || { cat "$work/file.txt"; fail "hdf5 run"; }
/usr/bin/python3 - "$work/synthetic" "$work/file" <<'PY' ||
import sys
import h5py
from compare_arrays import bit_identical, datasets

synthetic, from_file = sys.argv[1], sys.argv[2]
final = "checkpoints/step_00000060.h5"
problems = []
with h5py.File(f"{synthetic}/{final}", "r") as f:
    groups = [g for g in ("model", "buffers", "optimizer") if g in f and len(f[g])]
assert "model" in groups and "optimizer" in groups, f"groups of the checkpoint: {groups}"
for group in groups:
    problems += [f"/{group}/{p}" for p in bit_identical(datasets(f"{from_file}/{final}", group),
                                                        datasets(f"{synthetic}/{final}", group))]
losses = {}
for run in (synthetic, from_file):
    with h5py.File(f"{run}/metrics.h5", "r") as f:
        losses[run] = {"train/step": f["train/step"][:], "train/loss": f["train/loss"][:]}
steps = list(losses[synthetic]["train/step"])
assert steps == [10, 20, 30, 40, 50, 60], f"logged steps {steps}"
problems += bit_identical(losses[from_file], losses[synthetic])
for p in problems:
    print("FAIL:", p)
if not problems:
    print(f"bit for bit: /{', /'.join(groups)} of the final checkpoints and {len(steps)} losses")
sys.exit(1 if problems else 0)
PY
  fail "training on the make-data file differs from training on the same synthetic data"
echo "ok: hdf5 file and in-memory synthetic data train the same parameters and losses, bit for bit"

# Token stream with a TorchScript bigram model; validation from a named dataset.
"$ddptrain" make-data tokens --output "$work/tok.h5" --tokens 100000 --vocab 64 \
  --val-tokens 8192 >/dev/null || fail "make-data tokens"
/usr/bin/python3 "$(dirname "$0")/make_torchscript_bigram.py" "$work/bigram.pt" --vocab 64 >/dev/null
run2 train "$deck" --run.dir="$work/tokens" --data.type=tokens --data.path="$work/tok.h5" \
  --data.val_tokens=val_tokens --data.block=32 --model.type=torchscript \
  --model.path="$work/bigram.pt" --optim.lr=0.01 --train.steps=120 --log.every=40 \
  --eval.every=60 >"$work/tokens.txt" 2>&1 || { cat "$work/tokens.txt"; fail "token run"; }
/usr/bin/python3 - "$work/tokens/metrics.h5" <<'PY' || fail "token run metrics"
import math, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    ev = f["eval"]
    assert sorted(ev) == ["accuracy", "loss", "perplexity", "step"], sorted(ev)
    assert list(ev["step"][:]) == [60, 120], list(ev["step"][:])
    loss = ev["loss"][-1]
    assert abs(ev["perplexity"][-1] - math.exp(loss)) < 1e-9 * math.exp(loss)
    # Uniform guessing is log(64) = 4.16; the Markov chain is learnable far below that.
    assert loss < 0.7 * math.log(64), f"eval loss {loss} did not fall"
    print(f"ok: tokens eval loss {loss:.3f} (uniform {math.log(64):.3f})")
PY

# Regression with the last 10% of rows held out.
"$ddptrain" make-data regression --output "$work/reg.h5" --samples 2048 --features 16 \
  --outputs 3 >/dev/null || fail "make-data regression"
run2 train "$deck" --run.dir="$work/reg" --data.type=hdf5 --data.path="$work/reg.h5" \
  --data.val_fraction=0.1 --train.steps=200 --log.every=50 --eval.every=20 \
  >"$work/reg.txt" 2>&1 || { cat "$work/reg.txt"; fail "regression run"; }
grep -q "validation rows 1844..2047" "$work/reg.txt" || fail "val_fraction split: $(grep valid "$work/reg.txt")"
/usr/bin/python3 - "$work/reg/metrics.h5" <<'PY' || fail "regression metrics"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    loss = f["eval/loss"][:]
    assert len(loss) == 10 and loss[-1] < 0.5 * loss[0], list(loss)
    print(f"ok: regression eval mse {loss[0]:.4f} -> {loss[-1]:.4f}")
PY

# Early stopping: with min_delta larger than any improvement, patience 2 stops at the third
# evaluation (step 60 of 200), on every rank, with the last row logged.
run2 train "$deck" --run.dir="$work/early" --data.type=hdf5 --data.path="$work/reg.h5" \
  --data.val_fraction=0.1 --train.steps=200 --log.every=50 --eval.every=20 --train.patience=2 \
  --train.min_delta=10 --train.deterministic=true >"$work/early.txt" 2>&1 \
  || { cat "$work/early.txt"; fail "early-stopping run"; }
grep -q "early stop at step 60" "$work/early.txt" || fail "no early stop at step 60: $(tail -3 "$work/early.txt")"
/usr/bin/python3 - "$work/early/metrics.h5" <<'PY' || fail "early-stopping metrics"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert list(f["eval/step"][:]) == [20, 40, 60], list(f["eval/step"][:])
    assert list(f["train/step"][:]) == [50, 60], list(f["train/step"][:])
print("ok: early stop at step 60 after 2 evaluations without improvement")
PY

# Files that do not fit: exit 3, one line naming the file and the object, no run.dir.
/usr/bin/python3 - "$work/bad.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["inputs"] = np.random.rand(100, 16).astype("f4")
    f["targets"] = np.random.randint(0, 10, 100)
    f["names"] = np.array([b"row%d" % i for i in range(100)])  # strings: the wrong dtype
    f["flat"] = np.random.rand(100).astype("f4")                  # 1-D: the wrong rank
    labels = np.random.randint(0, 10, 100)
    labels[57] = 12                                               # outside the 10 classes
    f["targets_bad"] = labels
PY
expect_refused() {  # NAME PATTERN OVERRIDES...
  local name=$1 pattern=$2
  shift 2
  local err rc=0
  err=$("$ddptrain" train "$deck" --run.dir="$work/refused" --data.type=hdf5 "$@" 2>&1 >/dev/null) ||
    rc=$?
  [[ $rc -eq 3 ]] || fail "$name: exit code $rc, expected 3 ($err)"
  # shellcheck disable=SC2053 # the pattern is a glob
  [[ $err == $pattern ]] || fail "$name: message does not match '$pattern': $err"
  [[ $(printf '%s\n' "$err" | grep -c .) -eq 1 ]] || fail "$name: message is not one line: $err"
  [[ ! -e "$work/refused" ]] || fail "$name: run.dir was created"
  echo "ok ($name): $err"
}
expect_refused "missing inputs" "*bad.h5*dataset 'pixels' is missing*" \
  --data.path="$work/bad.h5" --data.inputs=pixels
expect_refused "wrong dtype" "*bad.h5*dataset 'names'*string*" \
  --data.path="$work/bad.h5" --data.inputs=names
expect_refused "wrong rank" "*bad.h5*dataset 'flat' has shape \[100\]*" \
  --data.path="$work/bad.h5" --data.inputs=flat
expect_refused "missing file" "*nothere.h5*no such file*" --data.path="$work/nothere.h5"
# Found at start (every label is read once), not at the step that first draws row 57.
expect_refused "label outside the classes" "*bad.h5*dataset 'targets_bad' row 57: label 12 is outside*" \
  --data.path="$work/bad.h5" --data.targets=targets_bad
echo "data file checks passed"
