#!/usr/bin/env bash
# ddptrain export: a checkpoint's model as model.safetensors (+ config.json for the built-in GPT).
#  - the file read with the format's own rules (8-byte length, JSON header, offsets tiling the
#    data, 8-byte alignment) holds every parameter: GPT-2's names, the four Conv1D weights per
#    block transposed ([in, out]), no lm_head when tied, lm_head when untied;
#  - a GPT-2 forward written here with Hugging Face's semantics (Conv1D: x @ W + b, exact GELU,
#    layer norm epsilon from config.json) on the exported file gives the logits of gpt.py's GPT
#    with the checkpoint's weights, within 1e-5;
#  - the moving average by default where the run kept one, the trained weights with
#    --weights=trained;
#  - above --max-shard-size, shards and model.safetensors.index.json as Hugging Face writes them,
#    the same tensors bit for bit, read back by eval as the checkpoint; a bad index: exit 3;
#  - bad input: exit code and line, nothing written.
# Usage: export.sh MPIEXEC DDPTRAIN DECK (the deck is unused: gpt_tokens.cfg is trained).
# DDPTRAIN_PYTHON: a Python with torch and h5py (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
gpt=$repo/inputs/gpt_tokens.cfg
train() {  # NAME [OPTION...]
  local name=$1
  shift
  "$ddptrain" train "$gpt" --run.dir="$work/$name" --train.steps=10 --checkpoint.every=10 \
    --eval.every=0 --train.threads=1 "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "training $name exited with $?"; }
}
train tied --train.ema_decay=0.9
train untied --model.tie=false
export_to() {  # RUN DIR [OPTION...]
  local run=$1 dir=$2
  shift 2
  "$ddptrain" export "$work/$run/config.cfg" --checkpoint "$work/$run/checkpoints/latest" \
    --output "$work/$dir" "$@" >"$work/$dir.txt" 2>&1 || { cat "$work/$dir.txt"; fail "export $dir"; }
}
export_to tied tied_average
export_to tied tied_trained --weights=trained
export_to untied untied_out
grep -q "export: .* tensors .* (step 10, moving average weights) -> .*model.safetensors and config.json" \
  "$work/tied_average.txt" || fail "no export line: $(cat "$work/tied_average.txt")"

"$python" - "$work" "$repo/share/ddptrain/models" <<'PY' || fail "the exported files are not GPT-2's"
import json, math, struct, sys
import h5py, numpy as np, torch
work, models = sys.argv[1:3]
sys.path.insert(0, models)
from gpt import GPT

def read_safetensors(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    assert 8 + length <= len(data) and (8 + length) % 8 == 0, "header length"
    header = json.loads(data[8:8 + length])
    meta = header.pop("__metadata__")
    body, tensors, end = data[8 + length:], {}, 0
    kinds = {"F32": np.float32, "I64": np.int64}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name}: offsets do not tile the data"
        array = np.frombuffer(body[begin:stop], dtype=kinds[info["dtype"]])
        tensors[name] = array.reshape(info["shape"])
        end = stop
    assert end == len(body), "bytes after the last tensor"
    return tensors, meta

conv1d = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")

def check_values(run, out, group):
    tensors, meta = read_safetensors(f"{work}/{out}/model.safetensors")
    with h5py.File(f"{work}/{run}/checkpoints/step_00000010.h5", "r") as f:
        stored = {n: f["model"][n][()] for n in f["model"]}
        if group == "ema":
            stored.update({n: f["ema"][n][()] for n in f["ema"]})
    assert set(tensors) == set(stored), (sorted(set(tensors) ^ set(stored)))
    for name, value in stored.items():
        want = value.T if name.endswith(conv1d) else value
        assert np.array_equal(tensors[name], want), name
    assert meta["ddptrain_step"] == "10", meta
    return tensors

def gpt2_logits(tensors, config, tokens):
    """GPT-2 as Hugging Face computes it: Conv1D is x @ W + b with W [in, out]."""
    t = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    eps, heads = config["layer_norm_epsilon"], config["n_head"]
    ln = lambda x, p: torch.nn.functional.layer_norm(x, x.shape[-1:], t[p + ".weight"], t[p + ".bias"], eps)
    conv = lambda x, p: x @ t[p + ".weight"] + t[p + ".bias"]
    n, length = tokens.shape
    x = t["wte.weight"][tokens] + t["wpe.weight"][:length]
    for i in range(config["n_layer"]):
        h = f"h.{i}."
        q, k, v = conv(ln(x, h + "ln_1"), h + "attn.c_attn").split(config["n_embd"], dim=2)
        split = lambda z: z.view(n, length, heads, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        att = att.masked_fill(torch.ones(length, length, dtype=torch.bool).triu(1), float("-inf"))
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(n, length, -1)
        x = x + conv(y, h + "attn.c_proj")
        x = x + conv(torch.nn.functional.gelu(conv(ln(x, h + "ln_2"), h + "mlp.c_fc")), h + "mlp.c_proj")
    x = ln(x, "ln_f")
    head = t["wte.weight"] if config["tie_word_embeddings"] else t["lm_head.weight"]
    return x @ head.T

tokens = torch.randint(0, 256, (3, 32), generator=torch.Generator().manual_seed(1))
for run, out, group, tied in (("tied", "tied_average", "ema", True), ("tied", "tied_trained", "model", True),
                              ("untied", "untied_out", "model", False)):
    tensors = check_values(run, out, group)
    config = json.load(open(f"{work}/{out}/config.json"))
    assert config["model_type"] == "gpt2" and config["tie_word_embeddings"] == tied, config
    assert (config["n_layer"], config["n_head"], config["n_embd"], config["vocab_size"], config["n_positions"]) == (4, 4, 64, 256, 32), config
    assert ("lm_head.weight" in tensors) == (not tied)
    model = GPT(256, 32, 4, 4, 64, tied=tied)
    model.load_state_dict({n: torch.from_numpy(v.T.copy() if n.endswith(conv1d) else v.copy())
                           for n, v in tensors.items()})
    with torch.no_grad():
        worst = float((gpt2_logits(tensors, config, tokens) - model(tokens)).abs().max())
    assert worst <= 1e-5, f"{out}: logits differ by {worst}"
    print(f"{out}: GPT-2's layout, logits within {worst:.1e} of gpt.py's")
PY

# Shards: above --max-shard-size the export is Hugging Face's sharded form, written over the
# single file of an earlier export into the same directory (which it removes); read back, it is
# the same model: its tensors those of the single file, bit for bit, and eval of it the
# checkpoint's loss.
export_to tied sharded
export_to tied sharded --max-shard-size=64KiB
grep -q -- "-> [0-9]* shards and .*model.safetensors.index.json" "$work/sharded.txt" ||
  fail "no shards in the export line: $(cat "$work/sharded.txt")"
[[ ! -e $work/sharded/model.safetensors ]] || fail "the earlier single file is still there"
"$python" - "$work" <<'PY' || fail "the shards are not the single file's model"
import json, os, re, struct, sys
import numpy as np
work = sys.argv[1]

def read(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__")
    body = data[8 + length:]
    return {n: np.frombuffer(body[i["data_offsets"][0]:i["data_offsets"][1]], np.float32)
            .reshape(i["shape"]) for n, i in header.items()}, len(body)

single, _ = read(f"{work}/tied_average/model.safetensors")
index = json.load(open(f"{work}/sharded/model.safetensors.index.json"))
files = sorted(set(index["weight_map"].values()))
assert len(files) > 1 and all(re.fullmatch(rf"model-\d{{5}}-of-{len(files):05d}\.safetensors", f)
                              for f in files), files
assert sorted(f for f in os.listdir(f"{work}/sharded") if f.endswith(".safetensors")) == files
merged, total = {}, 0
for f in files:
    tensors, size = read(f"{work}/sharded/{f}")
    assert size <= 64 * 1024 or len(tensors) == 1, f"{f}: {size} bytes in {len(tensors)} tensors"
    assert all(index["weight_map"][n] == f for n in tensors), f
    assert not set(tensors) & set(merged), f
    merged.update(tensors)
    total += size
assert index["metadata"]["total_size"] == total, (index["metadata"], total)
assert set(merged) == set(single) and all(np.array_equal(merged[n], single[n]) for n in single)
print(f"{len(files)} shards of at most 64 KiB: the single file's {len(single)} tensors, bit for bit")
PY
eval_loss() {  # CHECKPOINT: eval's result line ("eval: loss ... perplexity ...")
  "$ddptrain" eval "$work/tied/config.cfg" --checkpoint "$1" --train.threads=1 2>&1 |
    grep "^eval: loss" || true
}
from_checkpoint=$(eval_loss "$work/tied/checkpoints/latest")
from_shards=$(eval_loss "$work/sharded")
[[ -n $from_checkpoint && $from_checkpoint == "$from_shards" ]] ||
  fail "eval of the shards: '$from_shards', of the checkpoint: '$from_checkpoint'"
cp -r "$work/sharded" "$work/bad_index"
echo '{"weight_map": ' >"$work/bad_index/model.safetensors.index.json"
rc=0
message=$("$ddptrain" eval "$work/tied/config.cfg" --checkpoint "$work/bad_index" 2>&1) || rc=$?
[[ $rc -eq 3 ]] || fail "exit $rc, not 3, for an index that is not JSON: $message"
expect_message "model.safetensors.index.json: not JSON"
first_shard=$(ls "$work/sharded" | grep -m1 "^model-")
"$python" - "$work/sharded/model.safetensors.index.json" "$work/moved_index.json" "$first_shard" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
name = next(n for n, f in index["weight_map"].items() if f != sys.argv[3])
index["weight_map"][name] = sys.argv[3]  # a tensor put in a shard that does not hold it
json.dump(index, open(sys.argv[2], "w"))
PY
cp "$work/moved_index.json" "$work/bad_index/model.safetensors.index.json"
rc=0
message=$("$ddptrain" eval "$work/tied/config.cfg" --checkpoint "$work/bad_index" 2>&1) || rc=$?
[[ $rc -eq 3 ]] || fail "exit $rc, not 3, for an index that puts a tensor in the wrong shard: $message"
expect_message "where the index puts it"
echo "sharded export: $from_shards, as the checkpoint's"

rc=0
message=$("$ddptrain" export "$gpt" --checkpoint "$work/missing.h5" --output "$work/none" 2>&1) || rc=$?
[[ $rc -eq 3 ]] || fail "exit $rc, not 3, for a missing checkpoint: $message"
[[ ! -e $work/none/model.safetensors ]] || fail "an export of a missing checkpoint wrote a file"
touch "$work/a_file"
rc=0
message=$("$ddptrain" export "$gpt" --checkpoint "$work/tied/checkpoints/latest" \
  --output "$work/a_file" 2>&1) || rc=$?
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for an output that is a file: $message"
expect_message "is a file, not a directory"
rc=0
message=$("$ddptrain" export "$work/untied/config.cfg" --checkpoint "$work/untied/checkpoints/latest" \
  --output "$work/no_average" --weights=average 2>&1) || rc=$?
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for --weights=average without one: $message"
expect_message "the deck kept no moving average"
[[ ! -e $work/no_average/model.safetensors ]] || fail "a refused export wrote a file"
echo "export checks passed"
