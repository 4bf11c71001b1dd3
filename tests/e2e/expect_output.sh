#!/usr/bin/env bash
# Runs COMMAND; passes when it exits 0 and its output (stdout and stderr, joined into one line so
# that the pattern may span lines) matches the extended regular expression REGEX.
# Usage: expect_output.sh REGEX COMMAND [ARGS...]
set -uo pipefail
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: '$*' exited with $rc"; exit 1; }
printf '%s' "$out" | tr '\n' ' ' | grep -qE -- "$regex" || { echo "FAIL: output does not match '$regex'"; exit 1; }
echo "PASS: exit 0 and output matches '$regex'"
