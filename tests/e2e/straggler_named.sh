#!/usr/bin/env bash
# Stragglers named while the job runs: at 3 ranks, rank 2 sleeps 30 ms in each step's forward
# (the test hook DDPTRAIN_TEST_SLOW_RANK=2:30), a metrics row every 5 steps, with plain data
# parallel and with ZeRO-3 (where the fast ranks wait for rank 2 inside the unit gathers, which
# are not their compute):
#  - one warning line names rank 2 and its host at the third row (step 15), and only once;
#  - metrics.h5 has /ranks/step (one per /train row) and /ranks/compute_s [rows, 3], where rank 2's
#    forward + backward per step is above 30 ms and at least 1.2x each other rank's in every row;
#  - with dist.straggler_factor = 0 nothing is named.
# Usage: straggler_named.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"

train() {  # NAME OPTIONS...
  local name=$1
  shift
  DDPTRAIN_TEST_SLOW_RANK=2:30 "$mpiexec" -np 3 --oversubscribe -x DDPTRAIN_TEST_SLOW_RANK \
    "$ddptrain" train "$deck" --train.steps=40 --log.every=5 --log.progress=lines \
    --run.dir="$work/$name" "$@" >"$work/$name.txt" 2>&1 || { cat "$work/$name.txt"; fail "$name"; }
}

named_once() {  # NAME OPTIONS...: rank 2 named at step 15, once, and in every row of /ranks/
  local name=$1 log=$work/$1.txt
  train "$@"
  grep "straggler" "$log" || true
  named=$(grep -c "straggler: rank" "$log" || true)
  [[ $named -ge 1 ]] || { cat "$log"; fail "$name: no straggler line"; }
  grep -q "straggler: rank 2 ($(hostname))" "$log" ||
    fail "$name: the straggler line does not name rank 2 on $(hostname)"
  grep -q "straggler: rank 2 .*up to step 15;" "$log" ||
    fail "$name: rank 2 was not named at the third row (step 15)"
  [[ $(grep -c "straggler: rank 2" "$log") -eq 1 ]] || fail "$name: rank 2 named more than once"

  /usr/bin/python3 - "$work/$name/metrics.h5" "$name" <<'PY'
import sys
import h5py
import numpy as np
with h5py.File(sys.argv[1], "r") as f:
    steps = f["ranks/step"][:]
    compute = f["ranks/compute_s"][:]
    train_steps = f["train/step"][:]
name = sys.argv[2]
print(f"{name}: ranks/compute_s (ms):\n", np.round(compute * 1e3, 2))
failures = []
if list(steps) != list(train_steps):
    failures.append(f"/ranks/step {list(steps)} differs from /train/step {list(train_steps)}")
if compute.shape != (len(train_steps), 3):
    failures.append(f"/ranks/compute_s has shape {compute.shape}, not ({len(train_steps)}, 3)")
elif not np.all(compute[:, 2] > 0.030):
    failures.append("rank 2's forward + backward is not above the 30 ms it sleeps in every row")
elif not np.all(compute[:, 2] >= 1.2 * compute[:, :2].max(axis=1)):
    failures.append("rank 2 is not 1.2x slower than the others in every row")
for message in failures:
    print(f"FAIL: {name}:", message)
sys.exit(1 if failures else 0)
PY
}

named_once slowed
named_once slowed_zero3 --ddp.zero=3

train off --dist.straggler_factor=0
if grep -q "straggler" "$work/off.txt"; then fail "dist.straggler_factor = 0 named a straggler"; fi
echo "rank 2 named at step 15, once, with and without ZeRO-3; /ranks/compute_s shows it in every row"
