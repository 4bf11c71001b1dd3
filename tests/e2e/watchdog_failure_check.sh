#!/usr/bin/env bash
# A failure check that fails ends the job at once: exit code 5 with one error line from rank 1
# naming what failed and why. Without the check, the failing rank wakes from its 30 s sleep and the
# job ends with exit code 0 (the probe watches no deadline). How long it took is printed, not
# asserted. Usage: watchdog_failure_check.sh MPIEXEC PROBE
# (PROBE: tests/support/watchdog_failure_probe.cpp)
set -uo pipefail
source "$(dirname "$0")/probe_common.sh"
start=$SECONDS
timeout 120 "$mpiexec" -np 3 --oversubscribe --bind-to none "$probe" </dev/null >"$out" 2>&1
rc=$?
took=$((SECONDS - start))
echo "exit code $rc after $took s"
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5"
line=$(grep -a 'ddptrain: error:' "$out")
[[ $(grep -ac 'ddptrain: error:' "$out") -eq 1 ]] || fail "expected one error line"
[[ $line == "[rank 1 "*"] ddptrain: error: injected communicator failed at step 0: injected failure; aborting the job (exit code 5)" ]] ||
  fail "the error line does not name rank 1, what failed and why: $line"
echo "ok   $line"
echo "watchdog failure checks: all checks passed"
