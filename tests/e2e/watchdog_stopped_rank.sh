#!/usr/bin/env bash
# One rank stopped with SIGSTOP mid-training: the others time out in their next collective, and
# the job exits with code 5, with a report naming the collective, its deadline and the rank that
# did not arrive (without the watchdog the job waits forever: 120 s end the test). How long it
# took is printed, not asserted. Usage: watchdog_stopped_rank.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
timeout_s=5
"$mpiexec" -np 3 --oversubscribe --bind-to none "$ddptrain" train "$deck" --run.dir="$work/run" \
  --train.steps=1000000 --checkpoint.every=100 --dist.timeout_s=$timeout_s >"$work/out.txt" 2>&1 &
launcher=$!
stopped=
trap '[[ -n $stopped ]] && kill -KILL $stopped 2>/dev/null; kill -KILL $launcher 2>/dev/null; rm -rf "$work"' EXIT
wait_for_file "$work/run/checkpoints/step_00000100.h5" 120 || fail "training did not start"
stopped=$(rank_pid "$launcher" 2) || fail "no rank 2"
kill -STOP "$stopped"
start=$SECONDS
wait_guarded "$launcher" 120 || fail "still running after 120 s: it hung"
took=$((SECONDS - start))
echo "exit code $rc after $took s"
grep -A4 "collective timed out" "$work/out.txt"
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5: $(tail -5 "$work/out.txt")"
grep -q "collective timed out: '.*' at step [0-9]* did not complete within dist.timeout_s = $timeout_s s" \
  "$work/out.txt" || fail "report does not name the collective and the step"
grep -q "^ranks that did not arrive: 2$" "$work/out.txt" || fail "report does not name rank 2"
grep -q "rank 2 (.*): no answer" "$work/out.txt" || fail "report does not say rank 2 is silent"
grep -q "^ranks waiting in it: 0, 1$" "$work/out.txt" || fail "report does not list the waiting ranks"
gone_within 5 "$stopped" || fail "the stopped rank is still there"
echo "watchdog checks passed"
