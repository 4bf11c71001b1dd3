#!/usr/bin/env bash
# SIGUSR1 to one rank, then SIGTERM to every rank (what SLURM sends before and at the time
# limit): each time all ranks stop after the same step, write a checkpoint, exit 75; resumed with
# train.resume = auto, the run ends with parameters bit for bit those of an uninterrupted run, and
# a metrics.h5 with the uninterrupted run's rows: the same steps, every column bit for bit but the
# timing ones (the row a stop logs at its own step is dropped when the run resumes).
# Usage: stop_on_signal.sh MPIEXEC DDPTRAIN DECK [OPTION...]
set -euo pipefail
source "$(dirname "$0")/common.sh"
steps=1500
common=("--train.steps=$steps" --log.every=100 --checkpoint.every=200 --checkpoint.keep=20
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
  local rc=0
  wait "$launcher" || rc=$?
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
import sys
import h5py
from compare_arrays import bit_identical, datasets

whole, run, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
name = f"checkpoints/step_{steps:08d}.h5"
problems = [f"/model/{p}" for p in bit_identical(datasets(f"{run}/{name}"),
                                                 datasets(f"{whole}/{name}"))]
# Every column but the timing ones, of /train and /eval: the same rows, bit for bit.
timing = {"samples_per_s", "step_time_s", "comm_wait_s", "data_wait_s"}
rows = {}
for path in (whole, run):
    with h5py.File(f"{path}/metrics.h5", "r") as m:
        rows[path] = {f"{g}/{c}": m[g][c][()] for g in ("train", "eval") for c in m[g]
                      if c not in timing}
problems += bit_identical(rows[run], rows[whole])
step = list(rows[whole]["train/step"])
if step[-1] != steps or step != list(range(100, steps + 1, 100)):
    problems.append(f"the uninterrupted run logged steps {step}")
for p in problems:
    print("FAIL:", p)
if not problems:
    print(f"bit-identical parameters and metrics rows ({len(step)} rows, steps {step[0]}..{step[-1]},"
          f" columns {sorted(rows[whole])})")
sys.exit(1 if problems else 0)
PY
echo "stop on signal checks passed"
