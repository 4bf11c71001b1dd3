#!/usr/bin/env bash
# A job killed with SIGKILL while it writes a checkpoint leaves checkpoints/latest on the previous
# complete checkpoint, which loads, and train.resume = auto continues from it.
# Usage: kill_during_checkpoint.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
trap 'pkill -9 -f "run.dir=$work/run" 2>/dev/null; rm -rf "$work"' EXIT
# A model of ~8.5M parameters: with AdamW state each checkpoint is ~100 MB, so its write is long
# enough to be caught in the middle.
args=(train "$deck" --run.dir="$work/run" --model.hidden=2048,2048,2048
      --checkpoint.every=2 --checkpoint.keep=50 --log.every=1)
"$mpiexec" -np 2 --oversubscribe "$ddptrain" "${args[@]}" --train.steps=40 >"$work/first.txt" 2>&1 &
ckpt=$work/run/checkpoints
killed=""
for _ in $(seq 1 6000); do  # up to 60 s
  staging=$(ls "$ckpt"/.step_*.h5.tmp 2>/dev/null | head -1)
  if [[ -n $staging && -L $ckpt/latest ]]; then
    pkill -9 -f "run.dir=$work/run"
    killed=$(basename "$staging")
    break
  fi
  sleep 0.01
done
wait
[[ -n $killed ]] || fail "never saw a checkpoint being written after a complete one"
sleep 0.2
latest=$(readlink "$ckpt/latest")
echo "killed while writing $killed; latest -> $latest"
[[ ".$latest.tmp" != "$killed" ]] || fail "latest points at the checkpoint being written"
[[ -f $ckpt/$latest ]] || fail "latest points at a missing file"
/usr/bin/python3 -c "import h5py, sys; f = h5py.File('$ckpt/$latest', 'r'); sys.exit(0 if f.attrs['complete'] == 1 else 1)" \
  || fail "latest checkpoint is not complete"
step=$((10#$(echo "$latest" | grep -oP 'step_\K\d+')))
"$mpiexec" -np 2 --oversubscribe "$ddptrain" "${args[@]}" --train.steps=$((step + 2)) \
  --train.resume=auto >"$work/second.txt" 2>&1 || { cat "$work/second.txt"; fail "resume=auto failed"; }
grep -q "resumed *: at step $step" "$work/second.txt" || fail "did not resume at step $step"
echo "kill during checkpoint: resumed at step $step"
