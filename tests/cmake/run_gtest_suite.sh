#!/usr/bin/env bash
# run_gtest_suite.sh EXECUTABLE SUITE: every case of one GoogleTest suite, as one ctest test
# (tests/cmake/GtestSuites.cmake). Exit code: GoogleTest's when a case failed; 77 (skipped, for
# ctest's SKIP_RETURN_CODE) when none failed and one skipped, so that check.sh names the skip as
# it would a skipped test; 1 when the filter ran no case; 0 otherwise. GoogleTest's output passes
# through unchanged.
set -uo pipefail
output=$(mktemp)
trap 'rm -f "$output"' EXIT
"$1" --gtest_filter="$2.*" 2>&1 | tee "$output"
rc=$?
((rc == 0)) || exit "$rc"
if grep -q '^\[  SKIPPED \]' "$output"; then
  exit 77
fi
if ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* tests?\.' "$output"; then
  echo "FAIL: no case of suite $2 ran"
  exit 1
fi
