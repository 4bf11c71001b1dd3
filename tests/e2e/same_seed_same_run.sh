#!/usr/bin/env bash
# Determinism: the same deck and seed on the same rank count gives the same run (every loss,
# learning rate and gradient norm in metrics.h5 equal, and the same final checkpoint weights);
# another seed gives another run. With warmup + cosine, clipping and EMA on.
# Usage: same_seed_same_run.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
args=(train "$deck" --train.steps=120 --log.every=10 --optim.schedule=cosine --optim.warmup=10
      --optim.clip=2 --train.ema_decay=0.95 --checkpoint.every=120)
for name in a b; do
  "$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" "${args[@]}" \
    --run.dir="$work/$name" >"$work/$name.txt" 2>&1 || { cat "$work/$name.txt"; fail "run $name"; }
done
"$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" "${args[@]}" --run.seed=99 \
  --run.dir="$work/other" >"$work/other.txt" 2>&1 || { cat "$work/other.txt"; fail "other seed"; }
/usr/bin/python3 - "$work" <<'PY' || fail "runs with the same seed differ"
import sys, h5py, numpy as np
work = sys.argv[1]
def load(name):
    with h5py.File(f"{work}/{name}/metrics.h5", "r") as f:
        m = {c: f["train"][c][:] for c in ("step", "loss", "lr", "grad_norm")}
    with h5py.File(f"{work}/{name}/checkpoints/step_00000120.h5", "r") as c:
        m["weights"] = np.concatenate([c["model"][k][:].ravel() for k in sorted(c["model"])])
        m["ema"] = np.concatenate([c["ema"][k][:].ravel() for k in sorted(c["ema"])])
    return m
a, b, other = load("a"), load("b"), load("other")
for key in a:
    assert np.array_equal(a[key], b[key]), f"{key} differs between two runs with the same seed"
assert not np.array_equal(a["loss"], other["loss"]), "another seed gave the same losses"
print(f"ok: {len(a['loss'])} metric rows, {a['weights'].size} weights and their EMA identical")
PY
