#!/usr/bin/env bash
# train.resume = auto continues a run from its newest checkpoint (and its metrics.h5 keeps every
# row); a checkpoint with a flipped byte is refused with exit code 3, a one-line message naming
# the file and the object, and nothing written; `ddptrain inspect` summarises the good files and
# exits 3 on the damaged one. Usage: resume_and_corruption.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
common=(--run.dir="$work/run" --log.every=5 --checkpoint.every=5)

"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" --train.steps=10 \
  >"$work/first.txt" || fail "first run"
"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" --train.steps=20 \
  --train.resume=auto >"$work/second.txt" || fail "resumed run"
grep -q "resumed *: at step 10" "$work/second.txt" || fail "resume=auto did not pick step 10"
steps=$(/usr/bin/python3 -c "import h5py; print(h5py.File('$work/run/metrics.h5')['train/step'][:].tolist())")
[[ $steps == "[5, 10, 15, 20]" ]] || fail "metrics.h5 steps after resume: $steps"
[[ $(readlink "$work/run/checkpoints/latest") == step_00000020.h5 ]] || fail "latest link"

# Without the latest link (a copy made without symbolic links), resume = auto takes the newest
# complete file, passing over a newer one that is truncated, and the banner names the file.
rm "$work/run/checkpoints/latest"
head -c 3000 "$work/run/checkpoints/step_00000020.h5" >"$work/run/checkpoints/step_00000022.h5"
"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" --train.steps=25 \
  --train.resume=auto >"$work/third.txt" || fail "resume without the latest link"
grep -q "resumed *: at step 20 from $work/run/checkpoints/step_00000020.h5" "$work/third.txt" ||
  fail "resume = auto without the link: $(grep resumed "$work/third.txt")"

/usr/bin/python3 - "$work/run/checkpoints/step_00000025.h5" "$work/flipped.h5" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())  # step 25
data[len(data) * 2 // 3] ^= 0x5A  # inside the tensor data (metadata sits at both ends)
open(sys.argv[2], "wb").write(data)
PY
err=$("$ddptrain" train "$deck" --run.dir="$work/other" --train.resume="$work/flipped.h5" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 3 ]] || fail "flipped checkpoint: exit code $rc, expected 3 ($err)"
[[ $err == *flipped.h5*dataset*Fletcher32* ]] || fail "message does not name file, object and checksum: $err"
[[ $(printf '%s\n' "$err" | grep -c .) -eq 1 ]] || fail "message is not one line: $err"
[[ ! -e "$work/other" ]] || fail "run.dir was created for a refused checkpoint"
echo "ok: $err"

# inspect: a readable summary of good files, exit 3 for the damaged one.
"$ddptrain" inspect "$work/run/checkpoints/latest" >"$work/inspect.txt" || fail "inspect of a good checkpoint"
grep -q "step 25, epoch 0, written by 2 rank" "$work/inspect.txt" || fail "inspect: $(head -3 "$work/inspect.txt")"
grep -q "checksums verified" "$work/inspect.txt" || fail "inspect did not verify checksums"
"$ddptrain" inspect "$work/run/metrics.h5" | grep -q "/train: 5 rows, steps 5..25" || fail "inspect of metrics.h5"
"$ddptrain" inspect "$work/flipped.h5" >/dev/null 2>&1
rc=$?
[[ $rc -eq 3 ]] || fail "inspect of a damaged checkpoint: exit code $rc, expected 3"
echo "resume and corruption checks passed"
