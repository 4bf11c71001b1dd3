#!/usr/bin/env bash
# A checkpoint written by 2 ranks, resumed on 3 with the same global batch, ends within 1e-5
# (relative, per parameter) of the 2-rank continuation: the data order depends only on the seed
# and the step. Compared with h5py on the final checkpoints (a reader ddptrain did not write).
# Usage: resharded_resume.sh MPIEXEC DDPTRAIN DECK
set -eu
source "$(dirname "$0")/common.sh"
common=(--train.global_batch=48 --train.steps=20 --checkpoint.every=10 --log.every=10)

"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
  --run.dir="$work/two" >/dev/null
"$mpiexec" -np 3 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
  --run.dir="$work/three" --train.resume="$work/two/checkpoints/step_00000010.h5" >"$work/three.txt"
grep -q "24 per rank" <(grep -m1 "batch" "$work/three.txt") && { echo "FAIL: 3 ranks used 2-rank batch"; exit 1; }
/usr/bin/python3 - "$work/two/checkpoints/step_00000020.h5" "$work/three/checkpoints/step_00000020.h5" <<'PY'
import sys
import h5py
import numpy as np

worst = 0.0
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    assert a.attrs["world_size"] == 2 and b.attrs["world_size"] == 3, "world sizes"
    assert a.attrs["step"] == b.attrs["step"] == 20, "steps"
    for name in a["model"]:
        x, y = a["model"][name][()], b["model"][name][()]
        worst = max(worst, float(np.linalg.norm(x - y) / np.linalg.norm(x)))
print(f"largest relative difference 2-rank vs resharded 3-rank: {worst:.2e}")
sys.exit(0 if worst < 1e-5 else 1)
PY
