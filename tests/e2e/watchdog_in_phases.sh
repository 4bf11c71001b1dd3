#!/usr/bin/env bash
# The hang rule inside phases (comm/watchdog.hpp): a phase excuses a rank that answers it is busy
# in it, not one that gives no answer. At 3 ranks, default deadlines (dist.hang_floor_s = 30 s,
# dist.timeout_s = 600 s):
#   evaluation  rank 2 is held at the start of the evaluation at step 20
#               (DDPTRAIN_TEST_HOLD_PHASES), ranks 0 and 1 wait for it inside the evaluation, and
#               the test stops rank 2 with SIGSTOP: exit code 5 with a report that says the hang
#               rule found it (rank 2 gave no answer), not dist.timeout_s;
#   checkpoint  the same at the start of the checkpoint write at step 20 (ranks 0 and 1 wait in
#               the write's agreements);
#   slow_fsync  no false alarm: checkpoint.async, a checkpoint every 50 steps of 0.1 s
#               (DDPTRAIN_TEST_SLOW_RANK holds rank 0's forward), and rank 1's fsync of each
#               checkpoint takes 6 s (tests/support/fail_writes.c) with a hang floor of 2 s: the
#               other ranks' background writers wait for it in the sync agreement for seconds
#               while training goes on (training keeps its pace; the writer does not): exit code
#               0, no hang called. (With checkpoints every few quick steps the training thread
#               soon waits for the writer inside a phase, which excuses every wait: that hid it.)
# Without the rule the first two waited dist.timeout_s: the 120 s guard fails them (the time taken
# is printed, not asserted).
# Usage: watchdog_in_phases.sh FAIL_WRITES_LIB CASE MPIEXEC DDPTRAIN DECK
set -uo pipefail
fail_writes=$1
case=$2
shift 2
source "$(dirname "$0")/common.sh"

launcher=
stopped=
trap '[[ -n $stopped ]] && kill -KILL $stopped 2>/dev/null; [[ -n $launcher ]] && kill -KILL $launcher 2>/dev/null; rm -rf "$work"' EXIT

# wait_for_line FILE PATTERN SECONDS: true once FILE has a line matching PATTERN.
wait_for_line() {
  local deadline=$((SECONDS + $3))
  until grep -aq "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# stopped_in PHASE HELD WHAT PATTERN OPTIONS...: rank 2, held in the phase at step 20 by the
# settings HELD ("VARIABLE=VALUE ...", rank 2's environment only) until it prints WHAT, is
# stopped; the job must end by the hang rule within the guard, with a report whose first line
# matches PATTERN (what the other ranks wait in).
stopped_in() {
  local phase=$1 held=$2 what=$3 pattern=$4
  shift 4
  HELD=$held "$mpiexec" -np 3 --oversubscribe --bind-to none -x HELD \
    bash -c '[[ $OMPI_COMM_WORLD_RANK == 2 ]] && export $HELD
             exec "$@"' ddptrain-rank "$ddptrain" train "$deck" --run.dir="$work/run" \
    --train.steps=1000000 --log.every=10 --log.progress=lines "$@" </dev/null >"$work/out.txt" 2>&1 &
  launcher=$!
  wait_for_line "$work/out.txt" "$what" 120 ||
    fail "rank 2 was not held in '$phase': $(tail -5 "$work/out.txt")"
  stopped=$(rank_pid "$launcher" 2) || fail "no rank 2"
  [[ -n $stopped ]] || fail "no pid for rank 2"
  kill -STOP "$stopped"
  local start=$SECONDS
  wait_guarded "$launcher" 120 || fail "still running 120 s after rank 2 stopped: no hang found"
  launcher=
  echo "rank 2 stopped in '$phase': exit code $rc after $((SECONDS - start)) s"
  grep -a -A8 "collective hung\|timed out" "$work/out.txt" | grep -av "^--"
  [[ $rc -eq 5 ]] || fail "exit code $rc, expected 5: $(tail -5 "$work/out.txt")"
  if grep -aq "timed out" "$work/out.txt"; then fail "dist.timeout_s ended it, not the hang rule"; fi
  grep -aq "collective hung: $pattern, and rank(s) 2 gave no answer, twice running (the hang rule: past dist.hang_floor_s = 30 s" \
    "$work/out.txt" || fail "the report does not say that the hang rule found rank 2 silent in '$phase'"
  grep -aq "^ranks that did not arrive: 2$" "$work/out.txt" || fail "the report does not name rank 2"
  grep -aq "rank 2 (.*): no answer" "$work/out.txt" || fail "the report does not say rank 2 is silent"
  gone_within 5 "$stopped" || fail "the stopped rank is still there"
  stopped=
}

case $case in
  evaluation)
    # Ranks 0 and 1 wait in the evaluation's all-reduce: the report names it, and the phase.
    stopped_in "evaluation at step 20" DDPTRAIN_TEST_HOLD_PHASES=2:600000 \
      "test hook: sleeping 600.000 s at the start of 'evaluation at step 20'" \
      "'MPI all_reduce #[0-9]* ([0-9]* x Double)' at step 20 had waited [0-9.]* s inside 'evaluation at step 20'" \
      --data.val_fraction=0.1 --eval.every=20 --checkpoint.every=0
    ;;
  checkpoint)
    # Ranks 0 and 1 wait inside parallel HDF5's create: the report names the phase.
    stopped_in "checkpoint write at step 20" \
      "LD_PRELOAD=$fail_writes DDPT_FAIL_WRITES_UNDER=$work/run/checkpoints DDPT_FAIL_WRITES_AFTER=$((1 << 40)) DDPT_SLOW_OPEN_SECONDS=600" \
      "fail_writes: holding the open of $work/run/checkpoints/.step_00000020.h5.tmp" \
      "'checkpoint write at step 20' at step 20 had waited [0-9.]* s" \
      --checkpoint.every=20
    ;;
  slow_fsync)
    rc=0
    SLOW_FSYNC_RANK=1 DDPTRAIN_TEST_SLOW_RANK=0:100 DDPT_FAIL_WRITES_UNDER=$work/run/checkpoints \
      DDPT_FAIL_WRITES_AFTER=$((1 << 40)) timeout 240 "$mpiexec" -np 3 --oversubscribe \
      --bind-to none -x SLOW_FSYNC_RANK -x DDPTRAIN_TEST_SLOW_RANK -x LD_PRELOAD="$fail_writes" \
      -x DDPT_FAIL_WRITES_UNDER -x DDPT_FAIL_WRITES_AFTER \
      bash -c '[[ $OMPI_COMM_WORLD_RANK == "$SLOW_FSYNC_RANK" ]] && export DDPT_SLOW_FSYNC_SECONDS=6
               exec "$@"' ddptrain-rank "$ddptrain" train "$deck" --run.dir="$work/run" \
      --train.steps=150 --checkpoint.every=50 --checkpoint.async=true --dist.hang_floor_s=2 \
      --log.every=50 --log.progress=lines </dev/null >"$work/out.txt" 2>&1 || rc=$?
    grep -a "checkpoint" "$work/out.txt"
    [[ $rc -eq 0 ]] || fail "exit code $rc with a slow fsync on rank 1: $(grep -a -A6 "error" "$work/out.txt" | head -12)"
    if grep -aq "hung\|timed out" "$work/out.txt"; then fail "a hang was called"; fi
    [[ -f $work/run/checkpoints/step_00000150.h5 ]] || fail "no checkpoint of step 150"
    ;;
  *) fail "unknown case '$case' (evaluation, checkpoint, slow_fsync)" ;;
esac
echo "$case: passed"
