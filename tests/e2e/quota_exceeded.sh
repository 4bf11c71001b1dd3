#!/usr/bin/env bash
# An exceeded disk quota (EDQUOT) in the middle of a write, as a cluster's user or project quota
# ends a job on a file system that cannot reserve space ahead (NFS, older Lustre). These kernels
# make no quotas (no tmpfs quotas, no QFMT_V2 for ext4), so the fault is injected:
# tests/support/fail_writes.c, preloaded into the ranks, fails writes under one path with EDQUOT
# once a rank has written a given number of bytes there, and preallocation there with EOPNOTSUPP.
#  - a checkpoint over the quota ends a 2-rank job with exit 3 and one error line naming the
#    checkpoint and "Disk quota exceeded"; latest stays on the previous checkpoint, which loads;
#    no staging file is left;
#  - metrics.h5 over the quota ends the job with exit 3, naming metrics.h5.
# Usage: quota_exceeded.sh FAIL_WRITES_LIB MPIEXEC DDPTRAIN DECK [OPTION...]
set -uo pipefail
fail_writes=$1
shift
source "$(dirname "$0")/common.sh"
# run_job RUN_DIR PATH BYTES [OPTION...]: 2 ranks whose writes under PATH fail after BYTES; stdout
# and stderr to $work/NAME.out/.err; sets rc, seconds, errors (error lines) and message (the
# first). A hang ends at dist.timeout_s = 60 (exit 5), which fails.
run_job() {
  local dir=$1 start=$SECONDS name
  name=$(basename "$(dirname "$dir")")
  DDPT_FAIL_WRITES_UNDER=$2 DDPT_FAIL_WRITES_AFTER=$3 timeout 120 "$mpiexec" -np 2 \
    --oversubscribe -x LD_PRELOAD="$fail_writes" -x DDPT_FAIL_WRITES_UNDER \
    -x DDPT_FAIL_WRITES_AFTER "$ddptrain" train "$deck" --run.dir="$dir" --dist.timeout_s=60 \
    "${@:4}" "${extra[@]}" </dev/null >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  seconds=$((SECONDS - start))
  errors=$(grep -ac 'ddptrain: error:' "$work/$name.err")
  message=$(grep -a -m1 'ddptrain: error:' "$work/$name.err")
  err_file=$work/$name.err
}

# 1. A checkpoint over the quota: each is ~1.1 MB, written by rank 0 (HDF5 writes its chunks
#    twice: fill values when the dataset is made, then the data), so the first fits and a later
#    one does not.
mkdir -p "$work/ckpt"
run_job "$work/ckpt/run" "$work/ckpt/run/checkpoints" 2800000 --train.steps=60 \
  --checkpoint.every=10 --log.every=10
[[ $rc -eq 3 ]] || { cat "$err_file"; fail "quota exceeded at a checkpoint: exit $rc after ${seconds} s, expected 3"; }
[[ $errors -eq 1 ]] || { cat "$err_file"; fail "expected one error line, got $errors"; }
expect_message "could not be written (Disk quota exceeded;" "free on its file system"
failed=$(grep -o 'checkpoints/step_[0-9]*\.h5' <<<"$message" | head -1)
[[ -n $failed ]] || fail "the error line names no checkpoint file: $message"
ckpt=$work/ckpt/run/checkpoints
latest=$(readlink "$ckpt/latest")
[[ -n $latest && $latest < $(basename "$failed") ]] ||
  fail "latest -> '$latest', not a checkpoint before the failed $failed"
[[ ! -e $work/ckpt/run/$failed ]] || fail "the failed checkpoint $failed exists"
"$ddptrain" inspect "$ckpt/latest" >/dev/null || fail "the previous checkpoint does not load"
leftover=$(ls -A "$ckpt" | grep '\.tmp$')
[[ -z $leftover ]] || fail "staging files left behind: $leftover"
echo "ok   quota exceeded at a checkpoint: exit 3 after ${seconds} s: $message"

# 2. metrics.h5 over the quota: no checkpoints, a row every step.
mkdir -p "$work/metrics"
run_job "$work/metrics/run" "$work/metrics/run/metrics.h5" 200000 --train.steps=100000 \
  --log.every=1
[[ $rc -eq 3 ]] || { cat "$err_file"; fail "quota exceeded under metrics.h5: exit $rc after ${seconds} s, expected 3"; }
[[ $errors -eq 1 ]] || { cat "$err_file"; fail "expected one error line, got $errors"; }
expect_message "metrics.h5" "Disk quota exceeded" "free on its file system"
echo "ok   quota exceeded under metrics.h5: exit 3 after ${seconds} s: $message"
echo "quota exceeded: all checks passed"
