#!/usr/bin/env bash
# A full disk and a read-only run.dir, on small tmpfs file systems this test mounts (root only):
#  - a checkpoint that does not fit ends a 2-rank job at once with exit 3 and one error line
#    naming the checkpoint and the free space; latest stays on the previous checkpoint, which
#    loads; no staging file is left (it used to fail inside MPI-IO and hang until dist.timeout_s);
#  - metrics.h5 that cannot grow ends the job with exit 3, naming metrics.h5 and the free space;
#  - a run.dir on a read-only file system (new, or existing) is refused with exit 2 before
#    training starts;
#  - predictions that do not fit end predict with exit 3 and one line, the older file kept.
# Usage: disk_full.sh MPIEXEC DDPTRAIN DECK [OPTION...] (e.g. --checkpoint.async=true)
set -uo pipefail
source "$(dirname "$0")/common.sh"
[[ $(id -u) -eq 0 ]] || { echo "SKIP: mounting a small tmpfs needs root"; exit 77; }
mounts=()
cleanup() {
  pkill -9 -f "run.dir=$work/" 2>/dev/null
  local m
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
# small_fs NAME SIZE [ro]: a tmpfs of SIZE at $work/NAME.
small_fs() {
  mkdir -p "$work/$1"
  mount -t tmpfs -o "size=$2${3:+,$3}" tmpfs "$work/$1" || fail "cannot mount a tmpfs at $work/$1"
  mounts+=("$work/$1")
}
# run_job RUN_DIR [OPTION...]: 2 ranks; stdout and stderr to RUN_DIR.out/.err (beside run.dir's
# file system); sets rc and seconds. A hang ends at dist.timeout_s = 60 (exit 5), which fails.
run_job() {
  local dir=$1 start=$SECONDS
  shift
  timeout 120 "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" --run.dir="$dir" \
    --dist.timeout_s=60 "$@" "${extra[@]}" </dev/null >"$work/$(basename "$dir").out" \
    2>"$work/$(basename "$dir").err"
  rc=$?
  seconds=$((SECONDS - start))
  errors=$(grep -ac 'ddptrain: error:' "$work/$(basename "$dir").err")
  message=$(grep -a -m1 'ddptrain: error:' "$work/$(basename "$dir").err")
}

# 1. A checkpoint that does not fit: each is ~1.1 MB; the third cannot be written.
small_fs full 2600k
run_job "$work/full/run" --train.steps=60 --checkpoint.every=10 --log.every=10
[[ $rc -eq 3 ]] || { cat "$work/run.err"; fail "full disk at a checkpoint: exit $rc after ${seconds} s, expected 3"; }
[[ $errors -eq 1 ]] || { cat "$work/run.err"; fail "expected one error line, got $errors"; }
expect_message "checkpoints/step_00000030.h5" "No space left on device" "free on its file system"
ckpt=$work/full/run/checkpoints
[[ $(readlink "$ckpt/latest") == step_00000020.h5 ]] || fail "latest -> $(readlink "$ckpt/latest")"
"$ddptrain" inspect "$ckpt/latest" >/dev/null || fail "the previous checkpoint does not load"
leftover=$(ls -A "$ckpt" | grep '\.tmp$')
[[ -z $leftover ]] || fail "staging files left behind: $leftover"
echo "ok   full disk at a checkpoint: exit 3 after ${seconds} s: $message"

# 2. metrics.h5 that cannot grow: no checkpoints, a row every step, a file system nearly full.
small_fs metrics 1m
fallocate -l 880k "$work/metrics/filler" || fail "cannot fill the tmpfs"
run_job "$work/metrics/run" --train.steps=100000 --log.every=1
[[ $rc -eq 3 ]] || { cat "$work/run.err"; fail "full disk under metrics.h5: exit $rc after ${seconds} s, expected 3"; }
[[ $errors -eq 1 ]] || { cat "$work/run.err"; fail "expected one error line, got $errors"; }
expect_message "metrics.h5" "free on its file system" "No space left on device"
# HDF5's message of a failed write has line breaks: the error is still one line.
grep -a -A1 'ddptrain: error:' "$work/run.err" | tail -1 | grep -q '^, filename' &&
  fail "the error line is broken over several lines"
# log.txt, on the same file system, fails too: one warning, not a line per message.
log_errors=$(grep -ac 'LOG ERROR' "$work/run.err")
((log_errors == 0)) || fail "spdlog's LOG ERROR printed $log_errors times"
log_warnings=$(grep -ac "ddptrain: warning:.*log.txt" "$work/run.err")
((log_warnings <= 1)) || fail "log.txt warned $log_warnings times"
echo "ok   full disk under metrics.h5: exit 3 after ${seconds} s: $message"

# 3. run.dir on a read-only file system: a new one, and an existing one.
small_fs readonly 1m ro
run_job "$work/readonly/run" --train.steps=5
[[ $rc -eq 2 && $errors -eq 1 ]] || { cat "$work/run.err"; fail "new run.dir on a read-only file system: exit $rc, $errors error lines"; }
expect_message "run.dir '$work/readonly/run'" "Read-only file system"
echo "ok   new run.dir on a read-only file system: $message"
small_fs existing 1m
mkdir "$work/existing/run"
mount -o remount,ro "$work/existing" || fail "cannot remount read-only"
run_job "$work/existing/run" --train.steps=5
[[ $rc -eq 2 && $errors -eq 1 ]] || { cat "$work/run.err"; fail "existing read-only run.dir: exit $rc, $errors error lines"; }
expect_message "run.dir '$work/existing/run' is not writable" "Read-only file system"
echo "ok   existing run.dir on a read-only file system: $message"

# 4. Predictions that do not fit (2 ranks write parts of one file): refused before HDF5 writes
#    anything, exit 3 on every rank and one error line; an older file of that name is kept.
"$ddptrain" make-data classification --output "$work/data.h5" --samples 20000 --features 16 \
  --classes 6 >/dev/null || fail "make-data"
run_job "$work/predict_run" --data.type=hdf5 --data.path="$work/data.h5" --train.steps=5 \
  --checkpoint.every=5
[[ $rc -eq 0 ]] || { cat "$work/predict_run.err"; fail "the run to predict from failed"; }
small_fs predictions 400k
echo older >"$work/predictions/pred.h5"
timeout 120 "$mpiexec" -np 2 --oversubscribe "$ddptrain" predict "$work/predict_run/config.cfg" \
  --checkpoint "$work/predict_run/checkpoints/latest" --input "$work/data.h5" \
  --output "$work/predictions/pred.h5" --dist.timeout_s=60 </dev/null >"$work/predict.out" 2>&1
rc=$?
errors=$(grep -ac 'ddptrain: error:' "$work/predict.out")
message=$(grep -a -m1 'ddptrain: error:' "$work/predict.out")
[[ $rc -eq 3 && $errors -eq 1 ]] || { cat "$work/predict.out"; fail "predictions on a full disk: exit $rc, $errors error lines"; }
expect_message "predictions '$work/predictions/pred.h5' cannot be written: No space left on device" \
  "free on its file system" "nothing was written, an older file of that name is kept"
[[ $(ls -A "$work/predictions") == pred.h5 && $(cat "$work/predictions/pred.h5") == older ]] ||
  fail "the older predictions were not kept alone: $(ls -A "$work/predictions")"
echo "ok   predictions on a full disk: $message"
echo "disk full and read-only: all checks passed"
