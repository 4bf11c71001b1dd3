#!/usr/bin/env bash
# One rank killed mid-training: every other rank exits instead of waiting in a collective until
# the watchdog ends the job (the hang rule after 30 s, or dist.timeout_s): the job ends with no
# report of the watchdog's, before a 120 s guard. The time taken is printed, not asserted.
# Usage: killed_rank_ends_job.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
"$mpiexec" -np 3 --oversubscribe --bind-to none "$ddptrain" train "$deck" --run.dir="$work/run" \
  --train.steps=1000000 --checkpoint.every=100 >"$work/out.txt" 2>&1 &
launcher=$!
trap 'kill -KILL $launcher 2>/dev/null; rm -rf "$work"' EXIT
wait_for_file "$work/run/checkpoints/step_00000100.h5" 120 || fail "training did not start"
# Each pid found, or the test fails here: an empty survivor would pass gone_within below.
survivors=()
for rank in 0 2; do survivors+=("$(rank_pid "$launcher" "$rank")") || fail "no rank $rank"; done
killed=$(rank_pid "$launcher" 1) || fail "no rank 1"
kill -KILL "$killed" || fail "rank 1 (pid $killed) could not be killed"
start=$SECONDS
wait_guarded "$launcher" 120 || fail "still running after 120 s: it hung"
took=$((SECONDS - start))
echo "launcher exit code $rc after $took s"
[[ $rc -ne 0 ]] || fail "the job reported success"
grep -aEq "collective (timed out|hung)" "$work/out.txt" && fail "the ranks waited for the watchdog"
gone_within 10 "${survivors[@]}" || fail "a rank is still running"
echo "killed rank checks passed"
