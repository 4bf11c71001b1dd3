#!/usr/bin/env bash
# Output files reach the disk before they get their names: fsync fails with EIO under one folder
# (tests/support/fail_writes.c with DDPT_FAIL_FSYNC=1, preloaded), and each command that writes
# there ends with exit 3 and one error line naming its file and "Input/output error"; the older
# file of that name is unchanged and no staging file is left:
#  - `make-data` (rank 0 writes), `predict` on 2 ranks (written collectively), a checkpoint of a
#    2-rank `train` (checkpoints/latest stays on the previous one).
# Usage: failed_fsync.sh FAIL_WRITES_LIB MPIEXEC DDPTRAIN DECK
set -uo pipefail
fail_writes=$1
shift
source "$(dirname "$0")/common.sh"
out=$work/out
mkdir -p "$out"
# failing RANKS COMMAND...: the command with fsync failing under $out; sets rc and message.
failing() {
  local ranks=$1
  shift
  DDPT_FAIL_WRITES_UNDER=$out DDPT_FAIL_WRITES_AFTER=999999999999 DDPT_FAIL_FSYNC=1 \
    timeout 120 "$mpiexec" -np "$ranks" --oversubscribe --bind-to none -x LD_PRELOAD="$fail_writes" \
    -x DDPT_FAIL_WRITES_UNDER -x DDPT_FAIL_WRITES_AFTER -x DDPT_FAIL_FSYNC "$ddptrain" "$@" \
    </dev/null >"$work/failing.out" 2>"$work/failing.err"
  rc=$?
  message=$(grep -a 'ddptrain: error:' "$work/failing.err")
}
# refused NAME FILE [KEPT]: exit 3, one error line naming FILE and EIO, KEPT (default FILE) as it
# was, no staging file.
refused() {
  local kept=${3:-$2}
  [[ $rc -eq 3 ]] || { cat "$work/failing.out" "$work/failing.err"; fail "$1: exit $rc, not 3"; }
  [[ $(grep -c . <<<"$message") -eq 1 ]] || fail "$1: not one error line: $message"
  expect_message "$(basename "$2")" "Input/output error"
  cmp -s "$kept" "$work/before" || fail "$1: the older $(basename "$kept") changed"
  [[ -z $(find "$out" -name '.*.tmp') ]] || fail "$1: staging files left: $(find "$out" -name '.*.tmp')"
  echo "ok: $1: $message"
}

# make-data over an older file of the same name.
"$ddptrain" make-data classification --output "$out/data.h5" --samples 600 --features 8 \
  --classes 3 --seed 1 >/dev/null || fail "make-data"
cp "$out/data.h5" "$work/before"
failing 1 make-data classification --output "$out/data.h5" --samples 700 --features 8 \
  --classes 3 --seed 2 --force
refused "make-data" "$out/data.h5"

# predict, collectively, over an older prediction file.
"$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" train "$deck" --run.dir="$work/run" \
  --data.type=hdf5 --data.path="$out/data.h5" --model.hidden=16 --train.steps=20 \
  --checkpoint.every=10 >"$work/train.txt" 2>&1 || { cat "$work/train.txt"; fail "train"; }
predict=(predict "$work/run/config.cfg" --checkpoint "$work/run/checkpoints/latest"
         --input "$out/data.h5" --output "$out/pred.h5")
"$mpiexec" -np 2 --oversubscribe --bind-to none "$ddptrain" "${predict[@]}" >/dev/null 2>&1 ||
  fail "predict"
cp "$out/pred.h5" "$work/before"
failing 2 "${predict[@]}"
refused "predict" "$out/pred.h5"

# A checkpoint: the run resumed from step 20 fails at its first checkpoint; latest stays.
cp -r "$work/run" "$out/run"
latest=$(readlink "$out/run/checkpoints/latest")
cp "$out/run/checkpoints/$latest" "$work/before"
failing 2 train "$work/run/config.cfg" --run.dir="$out/run" --train.resume=auto \
  --train.steps=30 --checkpoint.every=10
refused "checkpoint" "$out/run/checkpoints/step_00000030.h5" "$out/run/checkpoints/$latest"
[[ $(readlink "$out/run/checkpoints/latest") == "$latest" ]] || fail "latest moved"
[[ ! -e $out/run/checkpoints/step_00000030.h5 ]] || fail "the unsynced checkpoint was published"
echo "ok: outputs are synced before they are published"
