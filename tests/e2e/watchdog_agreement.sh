#!/usr/bin/env bash
# A rank that never arrives at an agreement outside training (comm/host_group.hpp) ends the job
# as in training: exit code 5 and a report naming the agreement, the rank that did not arrive
# (alive, computing elsewhere) and the ranks waiting in it, within dist.timeout_s, instead of
# leaving the others waiting until the wall-clock limit. One rank is held up by a file server
# that stops answering (tests/support/fail_writes.c, preloaded):
#   run_dir  train: rank 0's write of run.dir/config.cfg stalls for 60 s; ranks 1 and 2 wait in
#            the run.dir check (rank 0's verdict on run.dir, broadcast).
#   predict  predict: rank 1's fsync of the staged predictions stalls for 60 s; ranks 0 and 2 wait
#            in the agreement that every rank's part reached the disk.
# Both agreements were raw MPI collectives the watchdog did not see: the job then hung.
# Usage: watchdog_agreement.sh FAIL_WRITES_LIB CASE MPIEXEC DDPTRAIN DECK
set -euo pipefail
fail_writes=$1
case=$2
shift 2
source "$(dirname "$0")/common.sh"
timeout_s=3

# run_stalled RANK STALL DDPTRAIN_ARGS...: ddptrain on 3 ranks, every one with fail_writes.c
# preloaded (so that HDF5 takes the same path on every rank: the library also refuses
# preallocation) and the setting STALL (VARIABLE=VALUE) on rank RANK only; 120 s at most. Its exit
# code. Writes past DDPT_FAIL_WRITES_AFTER bytes fail unless STALL makes them slow instead.
run_stalled() {
  local rank=$1 stall=$2
  shift 2
  local rc=0
  STALLED_RANK=$rank STALL=$stall timeout 120 "$mpiexec" -np 3 --oversubscribe --bind-to none \
    -x STALLED_RANK -x STALL -x LD_PRELOAD="$fail_writes" -x DDPT_FAIL_WRITES_UNDER \
    -x DDPT_FAIL_WRITES_AFTER \
    bash -c '[[ $OMPI_COMM_WORLD_RANK == "$STALLED_RANK" ]] && export "${STALL?}"
             exec "$@"' ddptrain-rank "$ddptrain" "$@" </dev/null >"$work/out.txt" 2>&1 || rc=$?
  return "$rc"
}

case $case in
  run_dir)
    stalled=0 waiting="1, 2" agreement="run.dir check"
    rc=0
    DDPT_FAIL_WRITES_UNDER=$work/run/config.cfg DDPT_FAIL_WRITES_AFTER=0 \
      run_stalled 0 DDPT_SLOW_WRITE_SECONDS=60 \
      train "$deck" --run.dir="$work/run" --train.steps=20 --dist.timeout_s=$timeout_s || rc=$?
    ;;
  predict)
    stalled=1 waiting="0, 2" agreement="sync of predictions '$work/out/pred.h5' to the disk"
    "$ddptrain" make-data classification --output "$work/data.h5" --samples 600 --features 16 \
      --classes 6 >/dev/null || fail "make-data"
    "$ddptrain" train "$deck" --run.dir="$work/run" --data.type=hdf5 --data.path="$work/data.h5" \
      --train.steps=10 --checkpoint.every=10 >"$work/train.txt" 2>&1 ||
      fail "train: $(tail -5 "$work/train.txt")"
    mkdir "$work/out"
    rc=0
    DDPT_FAIL_WRITES_UNDER=$work/out DDPT_FAIL_WRITES_AFTER=$((1 << 40)) \
      run_stalled 1 DDPT_SLOW_FSYNC_SECONDS=60 predict \
      "$work/run/config.cfg" --checkpoint "$work/run/checkpoints/latest" --input "$work/data.h5" \
      --output "$work/out/pred.h5" --dist.timeout_s=$timeout_s || rc=$?
    ;;
  *) fail "unknown case '$case' (run_dir, predict)" ;;
esac

echo "exit code $rc"
grep -a -A5 "collective timed out" "$work/out.txt" || true
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5: $(tail -5 "$work/out.txt")"
report=$(grep -a -m1 "ddptrain: error: collective timed out" "$work/out.txt") ||
  fail "no report: $(tail -5 "$work/out.txt")"
expected="' at step 0 did not complete within dist.timeout_s = $timeout_s s"
[[ $report == *"collective timed out: '$agreement (agreement #"[0-9]*")$expected" ]] ||
  fail "the report does not name the agreement '$agreement': $report"
grep -aqx "ranks that did not arrive: $stalled" "$work/out.txt" ||
  fail "the report does not name rank $stalled"
grep -aqxE "  rank $stalled \([^)]+\): at step 0, computing \(in no collective\)" "$work/out.txt" ||
  fail "the report does not say that rank $stalled computes"
grep -aqx "ranks waiting in it: $waiting" "$work/out.txt" ||
  fail "the report does not list ranks $waiting as waiting"
echo "a rank held up before '$agreement' ends the job with exit code 5, named: all checks passed"
