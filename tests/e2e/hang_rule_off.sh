#!/usr/bin/env bash
# The hang rule's and the flight recorder's off switches, end to end, each with rank 1 stopped
# (SIGSTOP) at step 100 of 3 ranks:
#   1. dist.hang_factor = 0 with dist.hang_floor_s = 1: only dist.timeout_s (8 s) ends the job
#      (exit 5, "collective timed out ... within dist.timeout_s = 8 s"); with the rule on, the
#      1 s floor would have called a hang ("collective hung") first.
#   2. dist.flight_records = 0 with dist.hang_floor_s = 2: the hang rule ends the job (exit 5,
#      "collective hung"), and no rank writes flight records: no run.dir/flight, no analysis in
#      the report.
# Usage: hang_rule_off.sh MPIEXEC DDPTRAIN DECK
set -uo pipefail
source "$(dirname "$0")/common.sh"

launcher=
stopped=
trap '[[ -n $stopped ]] && kill -KILL $stopped 2>/dev/null; [[ -n $launcher ]] && kill -KILL $launcher 2>/dev/null; rm -rf "$work"' EXIT

# stop_rank_1 NAME OPTIONS...: trains until step 100, stops rank 1, waits (120 s at most) for the
# job's end; its output in $work/NAME.txt, its exit code in rc.
stop_rank_1() {
  local name=$1
  shift
  "$mpiexec" -np 3 --oversubscribe --bind-to none "$ddptrain" train "$deck" \
    --run.dir="$work/$name" --train.steps=1000000 --checkpoint.every=0 --log.every=50 \
    --log.progress=lines "$@" >"$work/$name.txt" 2>&1 &
  launcher=$!
  local deadline=$((SECONDS + 120))
  until grep -aq "step \+100/" "$work/$name.txt"; do
    ((SECONDS < deadline)) || fail "$name: training did not reach step 100: $(tail -5 "$work/$name.txt")"
    sleep 0.1
  done
  # A job that ended by itself right after step 100 (a false hang, a crash) leaves no rank 1: say
  # which, with the job's last lines.
  stopped=$(rank_pid "$launcher" 1) || {
    local state="still running"
    kill -0 "$launcher" 2>/dev/null || state="already ended"
    fail "$name: no rank 1 (the job has $state): $(tail -8 "$work/$name.txt")"
  }
  [[ -n $stopped ]] || fail "$name: no pid for rank 1"
  kill -STOP "$stopped"
  local start=$SECONDS
  wait_guarded "$launcher" 120 || fail "$name: still running 120 s after rank 1 stopped"
  launcher=
  echo "$name: exit code $rc after $((SECONDS - start)) s"
  grep -a -A3 "collective hung\|collective timed out" "$work/$name.txt" | grep -av "^--"
  [[ $rc -eq 5 ]] || fail "$name: exit code $rc, expected 5: $(tail -5 "$work/$name.txt")"
  gone_within 5 "$stopped" || fail "$name: the stopped rank is still there"
  stopped=
}

stop_rank_1 factor_0 --dist.hang_factor=0 --dist.hang_floor_s=1 --dist.timeout_s=8
grep -aq "collective timed out: '.*' at step [0-9]* did not complete within dist.timeout_s = 8 s" \
  "$work/factor_0.txt" || fail "factor_0: the report does not say dist.timeout_s ended it"
if grep -aq "collective hung" "$work/factor_0.txt"; then fail "factor_0: the hang rule called it"; fi

stop_rank_1 no_flights --dist.flight_records=0 --dist.hang_floor_s=2
grep -aq "collective hung: " "$work/no_flights.txt" || fail "no_flights: the hang rule did not end it"
if grep -aq "flight records" "$work/no_flights.txt"; then
  fail "no_flights: the report speaks of flight records: $(grep -a "flight records" "$work/no_flights.txt")"
fi
[[ ! -e $work/no_flights/flight ]] || fail "no_flights: run.dir/flight was written: $(ls "$work/no_flights/flight")"
echo "dist.hang_factor = 0 and dist.flight_records = 0 do what they say"
