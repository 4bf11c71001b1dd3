#!/usr/bin/env bash
# run_gtest_suite.sh EXECUTABLE SUITE: every case of one GoogleTest suite, as one ctest test
# (tests/cmake/GtestSuites.cmake), through run_gtest.sh: GoogleTest's exit code when a case
# failed; 77 (skipped, for ctest's SKIP_RETURN_CODE) when none failed and one skipped, so that
# check.sh names the skip as it would a skipped test; 1 when the filter ran no case; 0 otherwise.
exec bash "$(dirname "${BASH_SOURCE[0]}")/run_gtest.sh" "$1" --gtest_filter="$2.*"
