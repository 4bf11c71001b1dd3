#!/usr/bin/env bash
# The watchdog's report names where a rank that did not arrive is when it is alive but elsewhere
# (README, "Watchdog"): ranks 0 and 1 time out in "all-reduce #7" at step 41 while rank 2 is in
# "checkpoint write at step 40" and rank 3 computes. The report (rank 0's, or rank 1's where its
# deadline passed first) must say "rank 2 (HOST): at step 41, in 'checkpoint write at step 40'
# for N s" and "rank 3 (HOST): at step 41, computing (in no collective)", list ranks 0 and 1 as
# waiting, and the job end with exit code 5 (where nothing timed out, the elsewhere ranks would
# join the barrier after 60 s and the job exit 0).
# Usage: watchdog_elsewhere.sh MPIEXEC PROBE (PROBE: tests/support/watchdog_elsewhere_probe.cpp)
set -euo pipefail
source "$(dirname "$0")/probe_common.sh"
rc=0
timeout 120 "$mpiexec" -np 4 --oversubscribe --bind-to none "$probe" </dev/null >"$out" 2>&1 ||
  rc=$?
echo "exit code $rc"
grep -a -A6 "collective timed out" "$out" || true
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5"
# expect_line REGEX WHAT: a line of the output matches REGEX (extended). Not the whole line: Open
# MPI 5's warnings from other ranks can land on the same line (a Debian 13 run failed so once).
expect_line() {
  grep -aqE "$1" "$out" || fail "the report does not $2"
}
expect_line "\[rank [01] [^]]+\] ddptrain: error: collective timed out: 'all-reduce #7' at step 41 did not complete within dist.timeout_s = 2 s" \
  "name the collective, the step and the deadline (from rank 0 or 1)"
expect_line "ranks that did not arrive: 2, 3" "name ranks 2 and 3 as not arrived"
expect_line "  rank 2 \([^)]+\): at step 41, in 'checkpoint write at step 40' for [0-9]+ s" \
  "say where rank 2 is"
expect_line "  rank 3 \([^)]+\): at step 41, computing \(in no collective\)" "say rank 3 computes"
expect_line "ranks waiting in it: 0, 1" "list ranks 0 and 1 as waiting"
if grep -aq "no answer" "$out"; then fail "a live rank is reported as not answering"; fi
echo "watchdog report of ranks elsewhere: all checks passed"
