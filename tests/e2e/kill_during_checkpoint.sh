#!/usr/bin/env bash
# A job killed with SIGKILL while it writes a checkpoint leaves checkpoints/latest on the previous
# complete checkpoint, which loads, and train.resume = auto continues from it.
# Usage: kill_during_checkpoint.sh MPIEXEC DDPTRAIN DECK [OPTION...] (e.g. --checkpoint.async=true)
set -u
source "$(dirname "$0")/common.sh"
trap 'pkill -9 -f "run.dir=$work/run" 2>/dev/null; rm -rf "$work"' EXIT
# A model of ~8.5M parameters: with AdamW state each checkpoint is ~100 MB, so its write is long
# enough to be caught in the middle.
args=(train "$deck" --run.dir="$work/run" --model.hidden=2048,2048,2048
      --checkpoint.every=2 --checkpoint.keep=50 --log.every=1 "${extra[@]}")
ckpt=$work/run/checkpoints
# One attempt: start the job, SIGKILL it once a checkpoint is being written after a complete one.
# Prints the staging file's name if the kill landed while it was still being written (it then
# survives the kill); the write may also have finished between seeing it and killing.
attempt() {
  rm -rf "$work/run"
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" "${args[@]}" --train.steps=40 >"$work/first.txt" 2>&1 &
  local staging=""
  for _ in $(seq 1 6000); do  # up to 60 s
    if [[ -L $ckpt/latest ]]; then
      staging=$(ls "$ckpt"/.step_*.h5.tmp 2>/dev/null | head -1)
      if [[ -n $staging ]]; then
        pkill -9 -f "run.dir=$work/run"
        break
      fi
    fi
    sleep 0.01
  done
  wait 2>/dev/null
  sleep 0.2
  [[ -n $staging && -e $staging ]] && basename "$staging"
}
killed=""
for _ in 1 2 3 4 5; do
  killed=$(attempt) && break
done
[[ -n $killed ]] || fail "never killed the job while it wrote a checkpoint after a complete one"
latest=$(readlink "$ckpt/latest")
echo "killed while writing $killed; latest -> $latest"
[[ ".$latest.tmp" != "$killed" ]] || fail "latest points at the checkpoint being written"
[[ -f $ckpt/$latest ]] || fail "latest points at a missing file"
/usr/bin/python3 -c "import h5py, sys; f = h5py.File('$ckpt/$latest', 'r'); sys.exit(0 if f.attrs['complete'] == 1 else 1)" \
  || fail "latest checkpoint is not complete"
step=$((10#$(echo "$latest" | grep -oP 'step_\K\d+')))
# The killed job's metrics.h5 keeps every row it flushed (each before its progress line), readable
# by h5py as a SWMR reader and by inspect; a plain open is refused (the writer never closed it).
printed=$(grep -cE '^step +[0-9]+/' "$work/first.txt")
/usr/bin/python3 - "$work/run/metrics.h5" "$printed" <<'PY' || fail "killed job's metrics.h5"
import sys, h5py
path, printed = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "r", swmr=True) as f:
    steps = list(f["train/step"][:])
assert printed > 0 and len(steps) >= printed, (printed, steps)
assert steps == list(range(1, len(steps) + 1)), steps
print(f"killed job's metrics.h5: {len(steps)} rows ({printed} printed)")
PY
"$ddptrain" inspect "$work/run/metrics.h5" | grep -q "/train: [0-9]* rows" \
  || fail "inspect cannot read the killed job's metrics.h5"
"$mpiexec" -np 2 --oversubscribe "$ddptrain" "${args[@]}" --train.steps=$((step + 2)) \
  --train.resume=auto >"$work/second.txt" 2>&1 || { cat "$work/second.txt"; fail "resume=auto failed"; }
grep -q "resumed *: at step $step" "$work/second.txt" || fail "did not resume at step $step"
# The resumed run rewrote metrics.h5 with the rows up to the checkpoint and then its own, and
# ended cleanly: a plain h5py open works again.
/usr/bin/python3 -c "
import h5py
steps = list(h5py.File('$work/run/metrics.h5', 'r')['train/step'][:])
assert steps == list(range(1, $step + 3)), steps" || fail "metrics.h5 after the resume"
echo "kill during checkpoint: resumed at step $step"
