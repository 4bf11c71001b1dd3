#!/usr/bin/python3
"""Checks on the files of a ddptrain run, with h5py (a reader ddptrain did not write).

  check_run.py metrics RUN_DIR STEPS
      metrics.h5 is complete: every /train dataset has the same length, the last step is STEPS,
      and the loss fell (last logged loss below 0.9 x the first).
  check_run.py compare CHECKPOINT_A CHECKPOINT_B TOLERANCE
      the same datasets under /model, same shapes and dtypes, every element finite and within
      TOLERANCE (absolute); TOLERANCE 0 means bit for bit.
Exit 0 when the check passes, 1 otherwise (with one line per problem)."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from compare_arrays import NotFinite, finite  # noqa: E402 (after the path it is found on)

kLossFallFactor = 0.9  # loose: a few hundred steps of the test decks fall far more than this


def check_metrics(run_dir: str, steps: int) -> list:
    problems = []
    with h5py.File(f"{run_dir}/metrics.h5", "r") as f:
        train = f["train"]
        lengths = {name: len(train[name]) for name in train}
        if len(set(lengths.values())) != 1:
            problems.append(f"/train datasets differ in length: {lengths}")
        step, loss = train["step"][:], train["loss"][:]
        if len(step) < 2:
            return problems + [f"only {len(step)} rows in /train"]
        if step[-1] != steps:
            problems.append(f"last step {step[-1]}, expected {steps}")
        if not np.all(np.diff(step) > 0):
            problems.append(f"steps not increasing: {list(step)}")
        if not np.all(np.isfinite(loss)):
            problems.append(f"{int(np.count_nonzero(~np.isfinite(loss)))} logged losses not finite")
        if not loss[-1] < kLossFallFactor * loss[0]:
            problems.append(f"loss did not fall: {loss[0]} -> {loss[-1]}")
        if not problems:
            print(f"metrics ok: {len(step)} rows to step {step[-1]}, "
                  f"loss {loss[0]:.4f} -> {loss[-1]:.4f}")
    return problems


def model_datasets(path: str) -> dict:
    found = {}

    def keep(name, obj):
        if isinstance(obj, h5py.Dataset):
            found[name] = obj[()]

    with h5py.File(path, "r") as f:
        f["model"].visititems(keep)
    return found


def compare(path_a: str, path_b: str, tolerance: float) -> list:
    a, b = model_datasets(path_a), model_datasets(path_b)
    if not a:
        return [f"no datasets under /model in {path_a}"]
    if sorted(a) != sorted(b):
        return [f"/model datasets differ: {sorted(a)} vs {sorted(b)}"]
    problems = []
    worst = 0.0
    for name in sorted(a):
        x, y = a[name], b[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append(f"/model/{name}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
            continue
        try:  # equal NaNs are still a run that failed
            finite(f"/model/{name} in {path_a}", x)
            finite(f"/model/{name} in {path_b}", y)
        except NotFinite as e:
            problems.append(str(e))
            continue
        if tolerance == 0:
            if x.tobytes() != y.tobytes():
                differ = int(np.count_nonzero(x != y))
                problems.append(f"/model/{name}: {differ} of {x.size} values differ (bit for bit)")
            continue
        diff = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
        worst = max(worst, diff)
        if not diff <= tolerance:
            problems.append(f"/model/{name}: max abs difference {diff:g} > {tolerance:g}")
    if not problems:
        how = "bit for bit" if tolerance == 0 else f"within {tolerance:g} (max {worst:g})"
        print(f"/model equal {how}: {len(a)} datasets")
    return problems


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "metrics":
        problems = check_metrics(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        problems = compare(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        print(__doc__)
        return 2
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
