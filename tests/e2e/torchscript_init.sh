#!/usr/bin/env bash
# model.init for a TorchScript model: a safetensors file of the module's own state-dict names
# (make_torchscript_mlp.py's MLP) holding other values than the module's (float32, one tensor
# float16), written here. PyTorch's module with those values gives the reference:
#  - train from the file at 1 rank, at 2 ranks, and under ZeRO-3 at 2 ranks (each rank reading its
#    own slices: under 0.6 of the file each, the two about the whole): the first step's loss, over the whole 64-row data
#    file in one batch (so its order does not matter), is PyTorch's within 1e-5 (relative);
#  - predict with the file as --checkpoint: each row's outputs are PyTorch's within 1e-5.
# Usage: torchscript_init.sh MPIEXEC DDPTRAIN DECK. DDPTRAIN_PYTHON: a Python with torch and h5py
# (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
"$python" "$(dirname "$0")/make_torchscript_mlp.py" "$work/mlp.pt" >"$work/make.txt" ||
  { cat "$work/make.txt"; fail "could not write the TorchScript model"; }

"$python" - "$work" <<'PY' || fail "could not write the data and the weights"
import sys
import h5py, numpy as np, torch
from safetensors_file import write_safetensors
work = sys.argv[1]
torch.manual_seed(21)
x = torch.randn(64, 32)
y = torch.randint(0, 5, (64,))
with h5py.File(f"{work}/data.h5", "w") as f:
    f["inputs"] = x.numpy()
    f["targets"] = y.numpy()
    f["targets"].attrs["classes"] = 5
module = torch.jit.load(f"{work}/mlp.pt")
values = {name: torch.randn_like(t) * 0.3 for name, t in module.state_dict().items()}
# Widened on the way in. A small tensor: a rank's share of the file is by elements, and a large
# float16 tensor would make the ranks' bytes uneven.
values["net.4.weight"] = values["net.4.weight"].half()
write_safetensors(f"{work}/weights.safetensors", values)
with torch.no_grad():
    for name, t in module.state_dict().items():
        assert not torch.equal(t, values[name].float()), name
        t.copy_(values[name].float())
    out = module(x).double()
np.save(f"{work}/outputs.npy", out.numpy())
np.save(f"{work}/loss.npy", torch.nn.functional.cross_entropy(out, y).numpy())
PY

mlp=(--model.type=torchscript --model.path="$work/mlp.pt" --data.type=hdf5
  --data.path="$work/data.h5" --train.threads=1)
train() {  # NAME RANKS OPTION...: one step from the file, the whole data file as its batch
  local name=$1 ranks=$2
  shift 2
  "$mpiexec" -np "$ranks" --oversubscribe "$ddptrain" train "$deck" "${mlp[@]}" \
    --model.init="$work/weights.safetensors" --train.global_batch=64 --train.steps=1 \
    --log.every=1 --eval.every=0 --run.dir="$work/$name" "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "$name exited with $?"; }
}
train one 1
train two 2
train zero3 2 --ddp.zero=3
"$ddptrain" predict "$work/one/config.cfg" --checkpoint "$work/weights.safetensors" \
  --input "$work/data.h5" --output "$work/predictions.h5" >"$work/predict.txt" 2>&1 ||
  { cat "$work/predict.txt"; fail "predict from the file exited with $?"; }

"$python" - "$work" <<'PY' || fail "the imported TorchScript weights are not the file's"
import re, sys
import h5py, numpy as np
work = sys.argv[1]
want = float(np.load(f"{work}/loss.npy"))
for name in ("one", "two", "zero3"):
    loss = h5py.File(f"{work}/{name}/metrics.h5", "r")["train/loss"][0]
    assert abs(loss - want) <= 1e-5 * abs(want), f"{name}: first loss {loss}, PyTorch's {want}"
line = re.search(r"weights: read by each rank: ([\d.]+) (B|KiB), ([\d.]+) (B|KiB) of ([\d.]+) (B|KiB)",
                 open(f"{work}/zero3.txt").read())
assert line, "no line of what each ZeRO-3 rank read"
units = {"B": 1, "KiB": 1024}
a, b, whole = (float(line.group(i)) * units[line.group(i + 1)] for i in (1, 3, 5))
assert a < 0.6 * whole and b < 0.6 * whole, f"ZeRO-3 ranks read {a} and {b} of {whole}"
assert 0.97 * whole <= a + b <= 1.1 * whole, f"ZeRO-3 ranks read {a} and {b} of {whole}"
with h5py.File(f"{work}/predictions.h5", "r") as f:
    predictions = f["predictions"][()]
outputs = np.load(f"{work}/outputs.npy")
worst = np.abs(predictions - outputs).max()
assert predictions.shape == outputs.shape and worst <= 1e-5, f"predictions differ by {worst}"
print(f"first loss {want:.6f} as PyTorch's at 1, 2 and ZeRO-3 2 ranks (read {a:.0f} + {b:.0f} "
      f"of {whole:.0f} bytes); predictions within {worst:.1e}")
PY
echo "model.init of a TorchScript model's state dict checks passed"
