#!/usr/bin/env bash
# A rank that is alive but elsewhere, in training as users run it (README, "Watchdog"): rank 0's
# write of a metrics row stalls for 60 s (metrics.h5 on a file server that stopped answering:
# tests/support/fail_writes.c with DDPT_SLOW_WRITE_SECONDS, preloaded; only rank 0 writes that
# file), while ranks 1 and 2 go on into the next step's collectives and time out there
# (dist.timeout_s = 3). The report must name rank 0 as not arrived and say that it is alive and
# computing (in no collective), one step behind, not that it gave no answer; the job must end with
# exit code 5.
# Usage: watchdog_computing_rank.sh FAIL_WRITES_LIB MPIEXEC DDPTRAIN DECK
set -euo pipefail
fail_writes=$1
shift
source "$(dirname "$0")/common.sh"
timeout_s=3
rc=0
# The allowance lets metrics.h5 be created, and its first row written, before the stall.
DDPT_FAIL_WRITES_UNDER=$work/run/metrics.h5 DDPT_FAIL_WRITES_AFTER=100000 \
  DDPT_SLOW_WRITE_SECONDS=60 timeout 120 "$mpiexec" -np 3 --oversubscribe --bind-to none \
  -x LD_PRELOAD="$fail_writes" -x DDPT_FAIL_WRITES_UNDER -x DDPT_FAIL_WRITES_AFTER \
  -x DDPT_SLOW_WRITE_SECONDS "$ddptrain" train "$deck" --run.dir="$work/run" \
  --train.steps=1000000 --log.every=1 --checkpoint.every=0 --dist.timeout_s=$timeout_s \
  </dev/null >"$work/out.txt" 2>&1 || rc=$?
echo "exit code $rc"
grep -a -A5 "collective timed out" "$work/out.txt" || true
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5: $(tail -5 "$work/out.txt")"
report=$(grep -a -m1 "ddptrain: error: collective timed out" "$work/out.txt") ||
  fail "no report: $(tail -5 "$work/out.txt")"
[[ $report =~ ^\[rank\ [12]\ .*\]\ ddptrain:\ error:\ collective\ timed\ out:\ \'.*\'\ at\ step\ ([0-9]+)\ did\ not\ complete\ within\ dist.timeout_s\ =\ $timeout_s\ s$ ]] ||
  fail "the report's first line does not come from rank 1 or 2, naming the collective and step: $report"
step=${BASH_REMATCH[1]}
grep -aqx "ranks that did not arrive: 0" "$work/out.txt" || fail "the report does not name rank 0"
grep -aqxE "  rank 0 \([^)]+\): at step $((step - 1)), computing \(in no collective\)" \
  "$work/out.txt" || fail "the report does not say that rank 0 computes, at step $((step - 1))"
grep -aqx "ranks waiting in it: 1, 2" "$work/out.txt" || fail "the report does not list ranks 1, 2"
if grep -aq "no answer" "$work/out.txt"; then fail "rank 0, alive, reported as not answering"; fi
echo "watchdog report of a rank computing elsewhere: all checks passed"
