#!/usr/bin/env bash
# The same stop signal sent again more than 5 s later, before the ranks have agreed to stop, ends
# the process at once, the default way (README, "Stopping for a time limit"; util/stop_signal.cpp).
# `train` is stuck in its start-up: its data file keeps libhdf5 busy forever
# (tests/fuzz/hdf5_crashes/inspect_endless_loop_in_H5HG_read.h5), and ddptrain waits for
# ddptrain-h5probe, which walks it in a process of its own, up to the probe's deadline (300 s
# here). Then, to the ddptrain process:
#  - SIGUSR1: recorded, no stop agreed yet; the process goes on waiting;
#  - SIGUSR1 again 1 s later: the same request delivered twice (srun forwards what SLURM sent):
#    ignored, the process is still there 6 s after the first;
#  - SIGUSR1 again, more than 5 s after the first: the process ends by SIGUSR1 (exit status
#    128 + 10) within 30 s, where it would otherwise wait for the probe's deadline.
# Usage: repeated_stop_signal.sh MPIEXEC DDPTRAIN DECK (one process, no mpirun: a singleton)
set -euo pipefail
source "$(dirname "$0")/common.sh"
endless=$(dirname "$0")/../fuzz/hdf5_crashes/inspect_endless_loop_in_H5HG_read.h5
[[ -f $endless ]] || fail "no $endless"
DDPTRAIN_H5PROBE_SECONDS=300 "$ddptrain" train "$deck" --data.type=hdf5 --data.path="$endless" \
  --run.dir="$work/run" </dev/null >"$work/out.txt" 2>&1 &
pid=$!
probe=
# The probe goes on after its parent ends: both go with the test.
trap 'kill -KILL $pid $probe 2>/dev/null; rm -rf "$work"' EXIT
# alive PID: the process exists and has not ended (a zombie, not yet waited for, has).
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $state != Z* ]]
}
deadline=$((SECONDS + 60))
until probe=$(pgrep -P "$pid" -f h5probe); do
  alive "$pid" || fail "train ended before it probed its data file: $(tail -3 "$work/out.txt")"
  ((SECONDS < deadline)) || fail "no ddptrain-h5probe after 60 s"
  sleep 0.1
done
echo "train (pid $pid) waits for ddptrain-h5probe (pid $probe) in its start-up"

kill -USR1 "$pid"
first=$SECONDS
sleep 1
kill -USR1 "$pid"
sleep 5
alive "$pid" || fail "a single SIGUSR1 and its duplicate 1 s later ended the process"
((SECONDS - first >= 6)) || fail "the repeat is not more than 5 s after the first signal"
kill -USR1 "$pid"
echo "SIGUSR1 at 0 s, 1 s and $((SECONDS - first)) s"
gone_within 30 "$pid" || fail "still running 30 s after the repeat"
rc=0
wait "$pid" || rc=$?
echo "exit status $rc"
usr1=$(kill -l USR1)
[[ $rc -eq $((128 + usr1)) ]] ||
  fail "exit status $rc, not $((128 + usr1)) (ended by SIGUSR1): $(tail -3 "$work/out.txt")"
echo "a repeated stop signal before the stop is agreed: all checks passed"
