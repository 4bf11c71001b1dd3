#!/usr/bin/env bash
# A run stopped at a step that is not a multiple of log.every and resumed writes the same
# metrics.h5 as the run that was never stopped: every /train row (step, epoch, loss, lr, grad_norm,
# skipped_steps) and every /eval row, bit for bit (the timing columns excepted). 2 ranks, rows
# every 10 steps, stopped at step 14: the resumed run's row 20 must still average steps 11..20.
# Usage: resumed_metrics_match.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
common=(--log.every=10 --checkpoint.every=7 --data.val_fraction=0.1 --eval.every=10)
run() {  # RUN_DIR STEPS [more options]
  local dir=$1 steps=$2 rc
  shift 2
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" --run.dir="$dir" \
    --train.steps="$steps" "$@" >"$dir.txt" 2>&1 ||
    { rc=$?; cat "$dir.txt"; fail "run $dir exited with $rc"; }
}
run "$work/straight" 30
run "$work/stopped" 14
run "$work/stopped" 30 --train.resume=auto
grep -q "resumed *: at step 14" "$work/stopped.txt" || fail "did not resume at step 14"
/usr/bin/python3 - "$work/straight/metrics.h5" "$work/stopped/metrics.h5" <<'PY'
import sys
import h5py
from compare_arrays import bit_identical

exact = {"train": ["step", "epoch", "loss", "lr", "grad_norm", "skipped_steps"],
         "eval": ["step", "loss", "accuracy"]}
bad = 0
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    for group, columns in exact.items():
        for c in columns:
            x, y = a[group][c][()], b[group][c][()]
            # Bit for bit, and finite: equal NaNs are a run that failed twice alike.
            problems = bit_identical({c: y}, {c: x})
            print(f"/{group}/{c}: {'DIFFERENT' if problems else 'identical'} ({len(x)} vs {len(y)} "
                  f"rows) {' '.join(problems)}")
            if problems:
                print("  uninterrupted:", x.tolist())
                print("  resumed      :", y.tolist())
                bad += 1
    assert list(a["train/step"][:]) == [10, 20, 30], list(a["train/step"][:])
    # /ranks keeps its rows across the resume as /train does (the times differ, not the layout).
    for name, f in (("uninterrupted", a), ("resumed", b)):
        steps, shape = list(f["ranks/step"][:]), f["ranks/compute_s"].shape
        print(f"{name}: /ranks/step {steps}, /ranks/compute_s {shape}")
        if steps != [10, 20, 30] or shape != (3, 2):
            bad += 1
sys.exit(1 if bad else 0)
PY
echo "resumed metrics equal the uninterrupted run's"

# A metrics.h5 of an older ddptrain, without the data_wait_s column, resumed: the old rows get NaN
# there, and the columns of /train keep one length.
run "$work/old" 14
/usr/bin/python3 -c 'import sys, h5py; del h5py.File(sys.argv[1], "r+")["train/data_wait_s"]' \
  "$work/old/metrics.h5"
run "$work/old" 30 --train.resume=auto
/usr/bin/python3 - "$work/old/metrics.h5" <<'PY'
import math, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    lengths = {c: len(f["train"][c]) for c in f["train"]}
    assert set(lengths.values()) == {3}, lengths
    wait = list(f["train/data_wait_s"][:])
    assert math.isnan(wait[0]) and all(w >= 0 for w in wait[1:]), wait
print(f"ok: the old file's row has data_wait_s NaN, the resumed rows {wait[1:]}")
PY
