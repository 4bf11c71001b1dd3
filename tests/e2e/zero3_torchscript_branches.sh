#!/usr/bin/env bash
# ZeRO-3 with a TorchScript model that calls one submodule inside an `if` on the data and another
# in a loop as many times as the data says (make_torchscript_branches.py): at 2 ranks, whose
# batches differ, the ranks soon take different branches. Those submodules are not units (their
# parameters stay in the root unit, gathered for the whole forward), so no rank gathers a unit the
# other does not: the run ends (a hang guard of 120 s each, not a bound on the time) and every
# metrics row's loss equals plain data parallel's at 2 ranks within 1e-5 (relative).
# Usage: zero3_torchscript_branches.sh MPIEXEC DDPTRAIN DECK. DDPTRAIN_PYTHON: a Python with torch
# and h5py (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
"$python" "$(dirname "$0")/make_torchscript_branches.py" "$work/branches.pt" >"$work/make.txt" ||
  { cat "$work/make.txt"; fail "could not write the TorchScript model"; }

train() {  # NAME OPTION...
  local name=$1
  shift
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" --model.type=torchscript \
    --model.path="$work/branches.pt" --train.steps=20 --log.every=5 --log.progress=lines \
    --run.dir="$work/$name" "$@" >"$work/$name.txt" 2>&1 &
  wait_guarded $! 120 || { cat "$work/$name.txt"; fail "$name still running after 120 s: a hang"; }
  [[ $rc -eq 0 ]] || { cat "$work/$name.txt"; fail "$name exited with $rc"; }
}
train plain
train zero3 --ddp.zero=3
grep -q "ZeRO-3: one per block" "$work/zero3.txt" ||
  { cat "$work/zero3.txt"; fail "the ZeRO-3 run did not shard the parameters"; }

"$python" - "$work/plain/metrics.h5" "$work/zero3/metrics.h5" <<'PY'
import sys
import h5py
import numpy as np
from compare_arrays import finite
with h5py.File(sys.argv[1], "r") as f:
    plain = f["train/loss"][:]
with h5py.File(sys.argv[2], "r") as f:
    zero3 = f["train/loss"][:]
print("loss, plain:", plain, "\nloss, ZeRO-3:", zero3)
if plain.shape != (4,) or zero3.shape != plain.shape:
    sys.exit(f"FAIL: {plain.shape[0]} and {zero3.shape[0]} metrics rows, not 4")
difference = float(np.max(np.abs(finite("ZeRO-3 loss", zero3) - finite("loss", plain)) /
                         np.abs(plain)))
print(f"largest relative difference {difference:.3g}")
sys.exit(0 if difference <= 1e-5 else "FAIL: ZeRO-3 trained otherwise than plain data parallel")
PY
echo "ZeRO-3 trained the model whose forward branches and loops on the data as plain data parallel"
