#!/usr/bin/env bash
# predict and eval of a checkpoint, and checkpoint.keep_best. Predictions written collectively by
# 1, 2 and 3 ranks agree, are in input order (checked against a NumPy forward pass of the
# checkpoint's weights, read with h5py), and h5dump reads them; eval on any rank count gives the
# loss the training run logged at that step; damaged or unfitting files give exit 3.
# Usage: predict_eval.sh MPIEXEC DDPTRAIN DECK
set -u
source "$(dirname "$0")/common.sh"
mpi() { local n=$1; shift; "$mpiexec" -np "$n" --oversubscribe --bind-to none "$ddptrain" "$@"; }

"$ddptrain" make-data classification --output "$work/data.h5" --samples 3000 --features 16 \
  --classes 6 --val-samples 401 >/dev/null || fail "make-data"
mpi 2 train "$deck" --run.dir="$work/run" --data.type=hdf5 --data.path="$work/data.h5" \
  --data.val_inputs=val_inputs --data.val_targets=val_targets --model.hidden=32 \
  --train.steps=90 --log.every=30 --checkpoint.every=30 --checkpoint.keep=1 \
  --checkpoint.keep_best=true >"$work/train.txt" 2>&1 || { cat "$work/train.txt"; fail "train"; }
deck_used=$work/run/config.cfg  # the resolved deck describes the model and data exactly

# keep_best: checkpoints/best is the checkpoint with the lowest logged eval loss, and survives
# pruning beside the newest one.
best=$(readlink "$work/run/checkpoints/best")
/usr/bin/python3 - "$work/run" "$best" <<'PY' || fail "keep_best"
import os, sys, h5py
run, best = sys.argv[1], sys.argv[2]
with h5py.File(f"{run}/metrics.h5", "r") as f:
    steps, losses = list(f["eval/step"][:]), list(f["eval/loss"][:])
assert steps == [30, 60, 90], steps
want = steps[losses.index(min(losses))]
assert best == f"step_{want:08d}.h5", (best, steps, losses)
kept = sorted(n for n in os.listdir(f"{run}/checkpoints") if n.startswith("step_"))
assert kept == sorted({best, "step_00000090.h5"}), kept
with h5py.File(f"{run}/checkpoints/{best}", "r") as c:
    assert abs(c.attrs["eval_loss"] - min(losses)) < 1e-12
print(f"ok: best -> {best} (eval losses {[round(x, 5) for x in losses]}), kept {kept}")
PY

# The post-analysis tool plots the eval curve and reports the best eval loss.
repo=$(cd "$(dirname "$0")/../.." && pwd)
/usr/bin/python3 "$repo/share/ddptrain/plot_metrics.py" "$work/run" -o "$work/curves.png" \
  >"$work/plot.txt" || fail "plot_metrics.py"
best_loss=$(/usr/bin/python3 -c "import h5py; print('%.5f' % min(h5py.File('$work/run/metrics.h5')['eval/loss'][:]))")
grep -q " $best_loss " "$work/plot.txt" || fail "plot_metrics.py summary lacks best eval $best_loss: $(cat "$work/plot.txt")"
test -s "$work/curves.png" || fail "plot_metrics.py wrote no PNG"

# predict on 1, 2 and 3 ranks (3 does not divide 3000 rows evenly).
for n in 1 2 3; do
  mpi $n predict "$deck_used" --checkpoint "$work/run/checkpoints/best" --input "$work/data.h5" \
    --output "$work/pred$n.h5" --eval.batch_size=128 >"$work/pred$n.txt" 2>&1 \
    || { cat "$work/pred$n.txt"; fail "predict on $n ranks"; }
done
/usr/bin/python3 - "$work" "$best" <<'PY' || fail "predictions"
import sys, h5py, numpy as np
work, best = sys.argv[1], sys.argv[2]
with h5py.File(f"{work}/data.h5", "r") as d:
    x = d["inputs"][:]
with h5py.File(f"{work}/run/checkpoints/{best}", "r") as c:
    w = {name: c["model"][name][:] for name in c["model"]}
# The deck's MLP: Linear(16, 32) -> ReLU -> Linear(32, 6), as a NumPy forward pass.
h = np.maximum(x @ w["0.weight"].T + w["0.bias"], 0)
expected = h @ w["2.weight"].T + w["2.bias"]
preds = []
for n in (1, 2, 3):
    with h5py.File(f"{work}/pred{n}.h5", "r") as p:
        assert p.attrs["world_size"] == n and p.attrs["step"] == int(best[5:13])
        preds.append(p["predictions"][:])
        assert (p["predicted_class"][:] == preds[-1].argmax(1)).all()
for n, p in zip((1, 2, 3), preds):
    assert p.shape == (3000, 6), p.shape
    err = np.abs(p - expected).max()
    assert err < 1e-4, f"{n} ranks: max |prediction - numpy| = {err}"
    diff = np.abs(p - preds[0]).max()
    assert diff < 1e-5, f"{n} ranks differ from 1 rank by {diff}"
print(f"ok: predictions on 1, 2, 3 ranks agree and match numpy (max err {err:.2e})")
PY
# h5dump, a reader that is not h5py: the last prediction row is the one h5py read, the eval losses
# in metrics.h5 are those the run printed, and the best checkpoint's step attribute is its step.
dump_values() { sed -n '/DATA {/,/}/p' | grep -v '[{}]' | tr -d ' \n'; }
dumped=$(h5dump -y -w 0 -m %.9g -d /predictions -s "2999,0" -c "1,6" "$work/pred3.h5" | dump_values)
expected=$(/usr/bin/python3 -c "
import h5py
print(','.join('%.9g' % float(v) for v in h5py.File('$work/pred3.h5', 'r')['predictions'][2999]))")
[[ -n $dumped && $dumped == "$expected" ]] || fail "h5dump prediction row: '$dumped' vs h5py '$expected'"
dumped=$(h5dump -y -w 0 -m %.5f -d /eval/loss "$work/run/metrics.h5" | dump_values)
printed=$(grep -oP '^eval at step \d+: loss \K[0-9.]+' "$work/train.txt" | paste -sd,)
[[ -n $dumped && $dumped == "$printed" ]] || fail "h5dump /eval/loss '$dumped' vs printed '$printed'"
step_attr=$(h5dump -a /step "$work/run/checkpoints/$best" | grep -oP '\(0\): \K\d+')
[[ $step_attr -eq $((10#${best:5:8})) ]] || fail "h5dump step attribute $step_attr of $best"
echo "ok: h5dump reads predictions, metrics and checkpoint values as the run logged them"
"$ddptrain" inspect "$work/pred3.h5" >"$work/inspect.txt" || fail "inspect predictions"
grep -q "predictions (classification), 3000 rows x 6 outputs, by 3 rank" "$work/inspect.txt" \
  || fail "inspect: $(cat "$work/inspect.txt")"

# eval: the same loss on 1 and 3 ranks as the training run logged at the best step.
logged=$(grep -oP "eval at step $((10#${best:5:8})): loss \K[0-9.]+" "$work/train.txt")
for n in 1 3; do
  out=$(mpi $n eval "$deck_used" --checkpoint "$work/run/checkpoints/best" 2>&1) \
    || fail "eval on $n ranks: $out"
  got=$(printf '%s\n' "$out" | grep -oP "^eval: loss \K[0-9.]+")
  [[ -n $logged && $got == "$logged" ]] || fail "eval on $n ranks: loss $got, logged $logged"
done
echo "ok: eval loss $logged on 1 and 3 ranks equals the logged one"

# ZeRO-3 (ddp.zero = 3): each rank holds its shard of the weights and gathers each layer's while
# it runs, so every rank runs every forward. 401 rows in batches of 100 leave rank 1 of 2 one
# forward short (201 + 200 rows): it runs one over a row of its own, or the ranks' gathers would
# part (exit 5). The predictions equal the unsharded ones; eval gives the logged loss.
"$ddptrain" make-data classification --output "$work/odd.h5" --samples 401 --features 16 \
  --classes 6 >/dev/null || fail "make-data odd.h5"
best_path=$work/run/checkpoints/best
mpi 1 predict "$deck_used" --checkpoint "$best_path" --input "$work/odd.h5" \
  --output "$work/odd_plain.h5" --eval.batch_size=100 >"$work/odd_plain.txt" 2>&1 \
  || { cat "$work/odd_plain.txt"; fail "predict odd.h5 on 1 rank"; }
for n in 2 3; do
  mpi $n predict "$deck_used" --checkpoint "$best_path" --input "$work/odd.h5" --ddp.zero=3 \
    --output "$work/odd_zero3_$n.h5" --eval.batch_size=100 --dist.timeout_s=30 \
    >"$work/odd_zero3_$n.txt" 2>&1 || { cat "$work/odd_zero3_$n.txt"; fail "ZeRO-3 predict, $n ranks"; }
done
/usr/bin/python3 - "$work" <<'PY' || fail "ZeRO-3 predictions"
import sys, h5py, numpy as np
work = sys.argv[1]
plain = h5py.File(f"{work}/odd_plain.h5", "r")["predictions"][:]
for n in (2, 3):
    sharded = h5py.File(f"{work}/odd_zero3_{n}.h5", "r")["predictions"][:]
    assert sharded.shape == plain.shape == (401, 6), (sharded.shape, plain.shape)
    worst = (np.abs(sharded - plain) / np.maximum(np.abs(plain), 1e-3)).max()
    assert worst <= 1e-6, f"ZeRO-3 on {n} ranks: predictions {worst:.2e} from unsharded ones"
    print(f"ok: ZeRO-3 predictions on {n} ranks within {worst:.1e} of unsharded ones")
PY
out=$(mpi 2 eval "$deck_used" --checkpoint "$best_path" --ddp.zero=3 --eval.batch_size=100 \
  --dist.timeout_s=30 2>&1) || fail "ZeRO-3 eval on 2 ranks: $out"
got=$(printf '%s\n' "$out" | grep -oP "^eval: loss \K[0-9.]+")
[[ -n $logged && $got == "$logged" ]] || fail "ZeRO-3 eval on 2 ranks: loss $got, logged $logged"
echo "ok: ZeRO-3 eval loss on 2 ranks (401 rows, batches of 100) equals the logged one"

# Refused: a flipped byte inside /predictions (inspect), an input of another width (predict).
/usr/bin/python3 - "$work/pred2.h5" "$work/flipped.h5" <<'PY'
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r") as f:
    offset = f["predictions"].id.get_chunk_info(0).byte_offset
with open(sys.argv[2], "r+b") as f:
    f.seek(offset + 100)
    byte = f.read(1)
    f.seek(offset + 100)
    f.write(bytes([byte[0] ^ 0x5A]))
PY
err=$("$ddptrain" inspect "$work/flipped.h5" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 3 && $err == *flipped.h5*predictions*Fletcher32* ]] \
  || fail "inspect of damaged predictions: exit $rc: $err"
"$ddptrain" make-data classification --output "$work/wide.h5" --samples 10 --features 20 >/dev/null
cp "$work/pred1.h5" "$work/keep.h5"
err=$("$ddptrain" predict "$deck_used" --checkpoint "$work/run/checkpoints/best" \
  --input "$work/wide.h5" --output "$work/keep.h5" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 3 && $err == *wide.h5*inputs*"[10, 20]"*"[16]"* ]] || fail "predict on a wider input: exit $rc: $err"
cmp -s "$work/pred1.h5" "$work/keep.h5" || fail "a refused predict changed its output file"
echo "predict/eval checks passed"
