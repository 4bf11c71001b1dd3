#!/usr/bin/env bash
# Bad input gives exit code 2, a one-line message naming the problem, and writes nothing.
# Usage: bad_input.sh DDPTRAIN DECK
set -u
ddptrain=$1
deck=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect_usage_error DESCRIPTION EXPECTED_TEXT ARGS...
expect_usage_error() {
  local what=$1 expected=$2
  shift 2
  local out rc
  out=$("$ddptrain" "$@" --run.dir="$work/run" 2>&1 >/dev/null)
  rc=$?
  local lines
  lines=$(printf '%s\n' "$out" | grep -c .)
  if [[ $rc -ne 2 ]]; then
    echo "FAIL $what: exit code $rc, expected 2 (stderr: $out)"; failures=$((failures + 1))
  elif [[ "$out" != *"$expected"* ]]; then
    echo "FAIL $what: message does not name '$expected': $out"; failures=$((failures + 1))
  elif [[ $lines -ne 1 ]]; then
    echo "FAIL $what: expected a one-line message, got $lines lines: $out"; failures=$((failures + 1))
  elif [[ -e "$work/run" ]]; then
    echo "FAIL $what: run.dir was created"; failures=$((failures + 1))
  else
    echo "ok   $what: $out"
  fi
}

printf '[train]\nbatch_size = 8\nsteps = 2\n[bogus]\nkey = 1\n' >"$work/unknown.cfg"
printf '[train]\nbatch_size = eight\n' >"$work/malformed.cfg"

expect_usage_error "unknown option on the command line" "train.bogus" train "$deck" --train.bogus=1
expect_usage_error "unknown key in the deck" "bogus.key" train "$work/unknown.cfg"
expect_usage_error "malformed value" "train.batch_size" train "$deck" --train.batch_size=abc
expect_usage_error "malformed value in the deck" "batch_size" train "$work/malformed.cfg"
expect_usage_error "missing deck" "no-such-deck.cfg" train "$work/no-such-deck.cfg"
expect_usage_error "negative batch size" "train.batch_size" train "$deck" --train.batch_size=-3
expect_usage_error "unknown choice" "optim.type" train "$deck" --optim.type=lamb
expect_usage_error "unknown command" "frobnicate" frobnicate

if [[ $failures -ne 0 ]]; then
  echo "$failures bad-input check(s) failed"
  exit 1
fi
echo "all bad-input checks passed"
