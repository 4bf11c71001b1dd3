#!/usr/bin/env bash
# SIGUSR1 to one rank, then SIGTERM to every rank (what SLURM sends before and at the time
# limit): each time all ranks stop after the same step, write a checkpoint, exit 75; resumed with
# train.resume = auto, the run ends with parameters bit for bit those of an uninterrupted run,
# and metrics.h5 holds every row. Usage: stop_on_signal.sh MPIEXEC DDPTRAIN DECK [OPTION...]
set -u
source "$(dirname "$0")/common.sh"
steps=1500
common=(--train.steps=$steps --log.every=100 --checkpoint.every=200 --checkpoint.keep=20
        "${extra[@]}")
launch=("$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" train "$deck")

"${launch[@]}" "${common[@]}" --run.dir="$work/whole" >"$work/whole.txt" 2>&1 ||
  fail "uninterrupted run: $(tail -3 "$work/whole.txt")"

# interrupt RUN_OUTPUT AFTER_CHECKPOINT SIGNAL RANKS...: one (re)started run, signalled once
# AFTER_CHECKPOINT exists; must end with exit 75.
interrupt() {
  local output=$1 after=$2 signal=$3
  shift 3
  "${launch[@]}" "${common[@]}" --run.dir="$work/run" --train.resume=auto >"$output" 2>&1 &
  local launcher=$!
  wait_for_file "$work/run/checkpoints/$after" 120 || fail "no $after: $(tail -3 "$output")"
  local rank
  for rank in "$@"; do
    kill -s "$signal" "$(rank_pid "$launcher" "$rank")" || fail "no rank $rank to signal"
  done
  wait "$launcher"
  local rc=$?
  [[ $rc -eq 75 ]] || fail "SIG$signal: exit code $rc, expected 75: $(tail -5 "$output")"
  grep -q "SIG$signal received: stopping after step" "$output" || fail "no stop message"
  grep -q "run the same command with train.resume = auto to continue (exit code 75)" "$output" ||
    fail "no resume hint"
}
interrupt "$work/first.txt" step_00000200.h5 USR1 1
first=$(readlink "$work/run/checkpoints/latest")
[[ $first != step_00000200.h5 ]] || fail "the stop wrote no checkpoint of its own"
interrupt "$work/second.txt" step_00000600.h5 TERM 0 1
second=$(readlink "$work/run/checkpoints/latest")
echo "stopped at $first, then at $second"
grep -q "resumed *: at step" "$work/second.txt" || fail "second run did not resume"

"${launch[@]}" "${common[@]}" --run.dir="$work/run" --train.resume=auto >"$work/last.txt" 2>&1 ||
  fail "final resumed run: $(tail -3 "$work/last.txt")"

/usr/bin/python3 - "$work/whole" "$work/run" "$steps" <<'PY' || fail "interrupted run differs"
import sys, h5py, numpy as np
whole, run, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
name = f"checkpoints/step_{steps:08d}.h5"
with h5py.File(f"{whole}/{name}") as a, h5py.File(f"{run}/{name}") as b:
    names = []
    a["model"].visit(lambda n: names.append(n) if isinstance(a["model"][n], h5py.Dataset) else None)
    assert names, "no parameters in the checkpoint"
    for n in names:
        assert np.array_equal(a["model"][n][()], b["model"][n][()]), f"/model/{n} differs"
with h5py.File(f"{run}/metrics.h5") as m:
    step = list(m["train/step"][:])
    assert step[-1] == steps and step == sorted(set(step)), step
    # Every row of the uninterrupted run is there too (the stops add rows at their steps).
    with h5py.File(f"{whole}/metrics.h5") as w:
        assert set(w["train/step"][:]) <= set(step), "rows lost"
print(f"bit-identical parameters ({len(names)} tensors); metrics rows: {step}")
PY
echo "stop on signal checks passed"
