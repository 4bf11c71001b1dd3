#!/usr/bin/env bash
# run_gtest.sh EXECUTABLE [GTEST_ARGS...]: one GoogleTest run (gtest_main's) as one ctest test.
# Exit code: GoogleTest's when a case failed; 77 (skipped, for ctest's SKIP_RETURN_CODE) when none
# failed and one skipped, so that check.sh names the skip as it would a skipped test (and fails it
# under CI=true) instead of counting it as passed; 1 when no case ran (a filter that matches
# nothing); 0 otherwise. GoogleTest's output passes through unchanged. (tests/mpi/mpi_main.cpp
# does the same for the MPI tests itself.)
set -uo pipefail
output=$(mktemp)
trap 'rm -f "$output"' EXIT
"$@" 2>&1 | tee "$output"
rc=$?
((rc == 0)) || exit "$rc"
if grep -q '^\[  SKIPPED \]' "$output"; then
  exit 77
fi
if ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* tests?\.' "$output"; then
  echo "FAIL: no test case ran: $*"
  exit 1
fi
