#!/usr/bin/env bash
# data.prefetch changes when batches are read, never which: runs on an HDF5 data file with
# grad_accum 3 and batches read ahead 0, 1 and 4 deep (the last one with asynchronous
# checkpoints, so three threads share HDF5) give the same losses and the same final weights, bit
# for bit; metrics.h5 has the data wait of every row.
# Usage: prefetch_same_run.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
"$ddptrain" make-data classification --output "$work/cls.h5" --samples 2048 --features 16 \
  --teacher-hidden 8 --classes 10 --seed 1234 >/dev/null || fail "make-data classification"
args=(train "$deck" --data.type=hdf5 --data.path="$work/cls.h5" --train.steps=60
      --train.grad_accum=3 --log.every=10 --checkpoint.every=20 --log.progress=lines)
run() {
  local name=$1
  shift
  "$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" "${args[@]}" "$@" \
    --run.dir="$work/$name" >"$work/$name.txt" 2>&1 || { cat "$work/$name.txt"; fail "run $name"; }
}
run none --data.prefetch=0
run one --data.prefetch=1
run four --data.prefetch=4 --checkpoint.async=true
grep -q "data wait [0-9.]* ms" "$work/one.txt" || { cat "$work/one.txt"; fail "no data wait shown"; }
/usr/bin/python3 - "$work" <<'PY' || fail "prefetching changed the run"
import sys, h5py, math, numpy as np
work = sys.argv[1]
def load(name):
    with h5py.File(f"{work}/{name}/metrics.h5", "r") as f:
        train = f["train"]
        lengths = {c: len(train[c]) for c in train}
        assert len(set(lengths.values())) == 1, f"{name}: /train lengths differ: {lengths}"
        wait = train["data_wait_s"][:]
        assert len(wait) == 6 and all(math.isfinite(w) and w >= 0 for w in wait), list(wait)
        m = {"loss": train["loss"][:], "grad_norm": train["grad_norm"][:]}
    with h5py.File(f"{work}/{name}/checkpoints/step_00000060.h5", "r") as c:
        m["weights"] = np.concatenate([c["model"][k][:].ravel() for k in sorted(c["model"])])
    return m
none = load("none")
for name in ("one", "four"):
    other = load(name)
    for key in none:
        assert np.array_equal(none[key], other[key]), f"{key} differs with prefetching ({name})"
print(f"ok: {len(none['loss'])} rows and {none['weights'].size} weights identical at prefetch 0, 1, 4")
PY
