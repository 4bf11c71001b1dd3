#!/usr/bin/env bash
# Writes of outputs other than training's checkpoints at 2 ranks (tests/e2e/quota_exceeded.sh)
# that fail part-way: an exceeded quota, injected by tests/support/fail_writes.c, preloaded. Each
# case ends with its exit code and one clear line, leaves no staging file, publishes nothing
# half-written and keeps the older file of that name byte for byte:
#  1. predict at 2 ranks, every rank's writes failing: exit 3 naming the predictions file and
#     "Disk quota exceeded" (it hung in HDF5's collective close);
#  2. predict at 1 rank: exit 3 (it crashed with SIGSEGV in MPI_Finalize, where HDF5 closed the
#     file whose writes had failed);
#  3. predict at 2 ranks, only rank 1's writes failing: HDF5's ranks part ways inside its collective
#     close, where no collective of ddptrain's is; the write's deadline (dist.timeout_s = 5) ends
#     the job with exit 5 naming it (it hung);
#  4. make-data whose writes fail after 4 KiB (they show only when the file is closed): exit 3 (a
#     truncated file was published under the output's name, then SIGSEGV);
#  5. a checkpoint of a 1-rank training run: exit 3 (SIGSEGV in MPI_Finalize); and with
#     checkpoint.async, where the background writer's error ends the run at the next step.
# Usage: failed_output_writes.sh FAIL_WRITES_LIB MPIEXEC DDPTRAIN DECK
set -uo pipefail
fail_writes=$1
shift
source "$(dirname "$0")/common.sh"

# with_failing_writes DIR AFTER FIRST NP COMMAND...: COMMAND on NP ranks under mpirun; the writes
# under DIR of ranks FIRST and up fail after AFTER bytes. Output in $work/out.txt; sets rc and
# message (the first error line). 60 s at most (a hang: exit 124). One app context, the library
# preloaded by a wrapper: Open MPI 5's mpirun (Debian 13) crashes on the MPMD ":" syntax.
with_failing_writes() {
  local dir=$1 after=$2 first=$3 np=$4
  shift 4
  FAILING_FROM=$first FAIL_WRITES_LIB=$fail_writes DDPT_FAIL_WRITES_UNDER=$dir \
    DDPT_FAIL_WRITES_AFTER=$after timeout 60 "$mpiexec" -np "$np" --oversubscribe --bind-to none \
    -x FAILING_FROM -x FAIL_WRITES_LIB -x DDPT_FAIL_WRITES_UNDER -x DDPT_FAIL_WRITES_AFTER \
    bash -c '((OMPI_COMM_WORLD_RANK >= FAILING_FROM)) && export LD_PRELOAD=$FAIL_WRITES_LIB
             exec "$@"' failing-writes "$@" </dev/null >"$work/out.txt" 2>&1
  rc=$?
  message=$(grep -a -m1 'ddptrain: error:' "$work/out.txt")
}
# expect_kept DIR NAME: DIR holds NAME with its older content ("older") and nothing else.
expect_kept() {
  [[ $(ls -A "$1") == "$2" ]] || fail "$1 holds: $(ls -A "$1" | tr '\n' ' ')"
  [[ $(cat "$1/$2") == older ]] || fail "$1/$2 was replaced"
}
# older_file DIR NAME: an empty DIR with NAME in it, holding "older".
older_file() {
  rm -rf "$1" && mkdir -p "$1" && echo older >"$1/$2"
}

"$ddptrain" make-data classification --output "$work/data.h5" --samples 600 --features 16 \
  --classes 6 >/dev/null || fail "make-data"
"$ddptrain" train "$deck" --run.dir="$work/run" --data.type=hdf5 --data.path="$work/data.h5" \
  --train.steps=10 --checkpoint.every=10 >"$work/train.txt" 2>&1 || fail "train: $(tail -5 "$work/train.txt")"
out=$work/out
predict=("$ddptrain" predict "$work/run/config.cfg" --checkpoint "$work/run/checkpoints/latest"
  --input "$work/data.h5" --output "$out/pred.h5" --dist.timeout_s=5)

# 1.
older_file "$out" pred.h5
with_failing_writes "$out" 0 0 2 "${predict[@]}"
[[ $rc -eq 3 ]] || fail "predict, every rank's writes failing: exit $rc, expected 3: $(tail -3 "$work/out.txt")"
expect_message "predictions '$out/pred.h5' could not be written (Disk quota exceeded;" \
  "an older file of that name is kept"
expect_kept "$out" pred.h5
echo "ok   predict, 2 ranks failing: exit 3: ${message:0:160}"

# 2.
older_file "$out" pred.h5
with_failing_writes "$out" 0 0 1 "${predict[@]}"
[[ $rc -eq 3 ]] || fail "predict at 1 rank: exit $rc, expected 3: $(tail -3 "$work/out.txt")"
expect_message "predictions '$out/pred.h5' could not be written (Disk quota exceeded;"
expect_kept "$out" pred.h5
echo "ok   predict, 1 rank: exit 3"

# 3. (The watchdog's abort leaves the staging file; only the older file's content is checked.)
older_file "$out" pred.h5
with_failing_writes "$out" 0 1 2 "${predict[@]}"
[[ $rc -eq 5 ]] || fail "predict, rank 1's writes failing: exit $rc, expected 5: $(tail -3 "$work/out.txt")"
grep -aq "collective timed out: 'write of predictions $out/pred.h5' at step 0 did not complete within dist.timeout_s = 5 s" \
  "$work/out.txt" || fail "the report does not name the write: $(grep -a error "$work/out.txt")"
[[ $(cat "$out/pred.h5") == older ]] || fail "the older predictions were replaced"
echo "ok   predict, rank 1 failing: exit 5, the write named"

# 4.
older_file "$out" data.h5
with_failing_writes "$out" 4096 0 1 "$ddptrain" make-data classification --output "$out/data.h5" \
  --samples 600 --features 16 --classes 6 --force
[[ $rc -eq 3 ]] || fail "make-data: exit $rc, expected 3: $(tail -3 "$work/out.txt")"
expect_message "'$out/data.h5' could not be written (Disk quota exceeded;" \
  "an older file of that name is kept"
expect_kept "$out" data.h5
echo "ok   make-data: exit 3"

# 5.
rm -rf "$work/run1"
with_failing_writes "$work/run1/checkpoints" 0 0 1 "$ddptrain" train "$deck" \
  --run.dir="$work/run1" --train.steps=20 --checkpoint.every=10
[[ $rc -eq 3 ]] || fail "a 1-rank run's checkpoint: exit $rc, expected 3: $(tail -3 "$work/out.txt")"
expect_message "checkpoint '$work/run1/checkpoints/step_00000010.h5' could not be written (Disk quota exceeded;"
[[ -d $work/run1/checkpoints && -z $(ls -A "$work/run1/checkpoints") ]] ||
  fail "checkpoints/ is missing or holds: $(ls -A "$work/run1/checkpoints" 2>&1)"
echo "ok   a 1-rank run's checkpoint: exit 3"
rm -rf "$work/run1"
with_failing_writes "$work/run1/checkpoints" 0 0 1 "$ddptrain" train "$deck" \
  --run.dir="$work/run1" --train.steps=20 --checkpoint.every=10 --checkpoint.async=true
[[ $rc -eq 3 ]] || fail "a 1-rank run's async checkpoint: exit $rc, expected 3: $(tail -3 "$work/out.txt")"
expect_message "checkpoint '$work/run1/checkpoints/step_00000010.h5' could not be written (Disk quota exceeded;"
[[ -d $work/run1/checkpoints && -z $(ls -A "$work/run1/checkpoints") ]] ||
  fail "checkpoints/ is missing or holds: $(ls -A "$work/run1/checkpoints" 2>&1)"
echo "ok   a 1-rank run's async checkpoint: exit 3"
echo "failed output writes: all checks passed"
