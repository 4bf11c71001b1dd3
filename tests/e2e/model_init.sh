#!/usr/bin/env bash
# Published weights in: GPT-2-layout safetensors files written here with random weights, read by
# `generate --checkpoint FILE` and by `model.init`.
#  - three files: GPT-2's plain names, float32, tied; the `transformer.` prefix, bfloat16, untied
#    (lm_head) and the attention-mask buffers GPT-2 files carry; a vocabulary of 250 in a model of
#    256 (rows padded with zeros; data.vocab = 250). For each, one greedy token per prompt and its
#    log-probability equal those of a GPT-2 forward written here with Hugging Face's semantics
#    (Conv1D: x @ W + b), within 1e-5: the padded rows are neither picked nor counted;
#  - model.init: fine-tuning from the first file at 2 ranks, the loss falls; the run's banner
#    says what was read; under ZeRO-3 at 3 ranks from each file the first loss is zero 0's, the
#    loss falls, and each rank read only its slices (its bytes read, well under the file);
#    a ddptrain checkpoint under ZeRO-3: exit 2;
#  - export -> read back: generate from a checkpoint and from its export give the same file; from
#    the export under ZeRO-3 at 3 ranks (each rank reading its slices) the same tokens,
#    log-probabilities within 1e-5 (the whole window each token, generate.sh);
#  - bad files (a shape the deck's model does not have, a tensor it does not have, a missing
#    one, a truncated file): exit 3, the line, no run directory.
#  - model.init_skip: tensors left as initialised (the file lacks them, or the model does); a glob
#    that matches nothing: exit 2;
# Usage: model_init.sh MPIEXEC DDPTRAIN DECK (the deck is unused: gpt_tokens.cfg is the model).
# DDPTRAIN_PYTHON: a Python with torch and h5py (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
gpt=$repo/inputs/gpt_tokens.cfg
model=(--model.n_layer=2 --model.n_head=4 --model.n_embd=32 --model.vocab=256 --train.threads=1)

"$python" - "$work" <<'PY'
import math, sys
import h5py, numpy as np, torch
from safetensors_file import write_safetensors
work = sys.argv[1]
torch.manual_seed(11)
LAYERS, EMBD, BLOCK = 2, 32, 32

def gpt2_weights(vocab, untied):
    w = {"wte.weight": torch.randn(vocab, EMBD) * 0.5, "wpe.weight": torch.randn(BLOCK, EMBD) * 0.1,
         "ln_f.weight": 1 + 0.1 * torch.randn(EMBD), "ln_f.bias": 0.1 * torch.randn(EMBD)}
    for i in range(LAYERS):
        h = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[h + ln + ".weight"] = 1 + 0.1 * torch.randn(EMBD)
            w[h + ln + ".bias"] = 0.1 * torch.randn(EMBD)
        for name, (fan_in, fan_out) in {"attn.c_attn": (EMBD, 3 * EMBD), "attn.c_proj": (EMBD, EMBD),
                                        "mlp.c_fc": (EMBD, 4 * EMBD), "mlp.c_proj": (4 * EMBD, EMBD)}.items():
            w[h + name + ".weight"] = torch.randn(fan_in, fan_out) / math.sqrt(fan_in)  # Conv1D: [in, out]
            w[h + name + ".bias"] = 0.1 * torch.randn(fan_out)
    if untied:
        w["lm_head.weight"] = torch.randn(vocab, EMBD) * 0.5
    return w

def write(path, tensors, dtype):
    write_safetensors(path, {name: t.to(dtype) for name, t in tensors.items()})

def logits(w, tokens, untied):
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (EMBD,), w[p + ".weight"], w[p + ".bias"], 1e-5)
    conv = lambda x, p: x @ w[p + ".weight"] + w[p + ".bias"]
    n, t = tokens.shape
    x = w["wte.weight"][tokens] + w["wpe.weight"][:t]
    for i in range(LAYERS):
        h = f"h.{i}."
        q, k, v = conv(ln(x, h + "ln_1"), h + "attn.c_attn").split(EMBD, dim=2)
        split = lambda z: z.view(n, t, 4, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(EMBD // 4)
        att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        x = x + conv((att.softmax(-1) @ v).transpose(1, 2).reshape(n, t, EMBD), h + "attn.c_proj")
        x = x + conv(torch.nn.functional.gelu(conv(ln(x, h + "ln_2"), h + "mlp.c_fc")), h + "mlp.c_proj")
    head = w["lm_head.weight"] if untied else w["wte.weight"]
    return (ln(x, "ln_f") @ head.T)[:, -1].double()

tokens = torch.randint(0, 250, (8, 6))
with h5py.File(f"{work}/prompts.h5", "w") as f:
    f["tokens"] = tokens.reshape(-1).numpy().astype(np.int64)
    f["offsets"] = np.arange(0, 49, 6, dtype=np.int64)
cases = {"plain": (256, False, torch.float32), "prefixed": (256, True, torch.bfloat16),
         "padded": (250, False, torch.float32)}
for name, (vocab, untied, dtype) in cases.items():
    w = gpt2_weights(vocab, untied)
    stored = {("transformer." + k if name == "prefixed" and k != "lm_head.weight" else k): v for k, v in w.items()}
    if name == "prefixed":
        for i in range(LAYERS):  # GPT-2 files carry the attention masks as buffers
            stored[f"transformer.h.{i}.attn.bias"] = torch.ones(1, 1, BLOCK, BLOCK).tril()
    write(f"{work}/{name}.safetensors", stored, dtype)
    exact = {k: v.to(dtype).float() for k, v in w.items()}  # what the file holds
    out = logits(exact, tokens, untied)
    out = torch.cat([out, torch.full((8, 256 - vocab), -1e30, dtype=torch.float64)], 1) if vocab < 256 else out
    np.save(f"{work}/{name}.npy", np.stack([out.argmax(1).numpy(), (out.log_softmax(1).max(1).values).numpy()]))
PY

generate_from() {  # NAME FILE [OPTION...]
  local name=$1 file=$2
  shift 2
  "$ddptrain" generate "$gpt" "${model[@]}" --checkpoint "$file" --input "$work/prompts.h5" \
    --output "$work/$name.h5" --generate.max_new_tokens=1 "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "generate from $name exited with $?"; }
}
generate_from plain "$work/plain.safetensors"
generate_from prefixed "$work/prefixed.safetensors" --model.tie=false
mkdir "$work/padded_dir" && cp "$work/padded.safetensors" "$work/padded_dir/model.safetensors"
generate_from padded "$work/padded_dir" --data.vocab=250
grep -q "weights: 28 tensors (.*) read from .*plain.safetensors" "$work/plain.txt" ||
  fail "no line of what was read: $(cat "$work/plain.txt")"
"$python" - "$work" <<'PY' || fail "generation from the imported weights differs from GPT-2's forward"
import sys, h5py, numpy as np
work = sys.argv[1]
for name in ("plain", "prefixed", "padded"):
    want = np.load(f"{work}/{name}.npy")
    with h5py.File(f"{work}/{name}.h5", "r") as f:
        tokens, logprobs = f["tokens"][()], f["logprobs"][()]
    assert np.array_equal(tokens, want[0].astype(np.int64)), f"{name}: tokens {tokens} != {want[0]}"
    worst = np.abs(logprobs - want[1]).max()
    assert worst <= 1e-5, f"{name}: log-probabilities differ by {worst}"
    print(f"{name}: GPT-2's tokens, log-probabilities within {worst:.1e}")
PY

# Fine-tuning from the first file at 2 ranks: the loss falls.
"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$gpt" "${model[@]}" \
  --model.init="$work/plain.safetensors" --run.dir="$work/tuned" --train.steps=40 \
  --eval.every=0 --log.every=10 --checkpoint.every=40 >"$work/tuned.txt" 2>&1 ||
  { cat "$work/tuned.txt"; fail "fine-tuning exited with $?"; }
"$python" - "$work/tuned/metrics.h5" <<'PY' || fail "fine-tuning from the file did not lower the loss"
import sys, h5py
loss = h5py.File(sys.argv[1], "r")["train/loss"][()]
assert loss[-1] < loss[0], loss
print(f"fine-tuned from the file: loss {loss[0]:.3f} -> {loss[-1]:.3f}")
PY

# Under ZeRO-3 at 3 ranks each rank reads only its slices of the file: from each file the first
# loss is the zero-0 run's (plain: float32, tied; prefixed: bfloat16, untied, with the masks;
# padded: 250 rows of 256), the loss falls, and each rank read about a third of the tensors, the
# three together about the whole (the zero-0 run's line: the whole file by every rank).
tune3() {  # NAME ZERO FILE STEPS [OPTION...]
  local name=$1 zero=$2 file=$3 steps=$4
  shift 4
  "$mpiexec" -np 3 --oversubscribe "$ddptrain" train "$gpt" "${model[@]}" --train.global_batch=24 \
    --model.init="$work/$file" --ddp.zero="$zero" --run.dir="$work/$name" --train.steps="$steps" \
    --eval.every=0 --log.every=1 "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "$name: fine-tuning at 3 ranks, ddp.zero = $zero, exited"; }
}
tune3 plain_z0 0 plain.safetensors 30
tune3 plain_z3 3 plain.safetensors 30
tune3 prefixed_z0 0 prefixed.safetensors 1 --model.tie=false
tune3 prefixed_z3 3 prefixed.safetensors 1 --model.tie=false
tune3 padded_z0 0 padded.safetensors 1 --data.vocab=250
tune3 padded_z3 3 padded.safetensors 1 --data.vocab=250
"$python" - "$work" <<'PY' || fail "ZeRO-3's import differs from zero 0's, or a rank read more than its slices"
import json, re, struct, sys
import h5py
work = sys.argv[1]
loss = {n: h5py.File(f"{work}/{n}/metrics.h5", "r")["train/loss"][()]
        for z in ("z0", "z3") for n in (f"plain_{z}", f"prefixed_{z}", f"padded_{z}")}
for name in ("plain", "prefixed", "padded"):
    a, b = loss[f"{name}_z0"][0], loss[f"{name}_z3"][0]
    assert abs(a - b) <= 1e-5 * abs(a), f"{name}: first loss {b} under ZeRO-3, {a} at zero 0"
z3 = loss["plain_z3"]
assert z3[-5:].mean() < z3[0], f"ZeRO-3 fine-tuning did not lower the loss: {z3}"
print(f"ZeRO-3 from the file: first losses as zero 0's; loss {z3[0]:.3f} -> {z3[-5:].mean():.3f}")
with open(f"{work}/plain.safetensors", "rb") as f:  # every tensor of it is the model's
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
whole = sum(e["data_offsets"][1] - e["data_offsets"][0] for e in header.values())
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
def each_rank(name):
    line = re.search(r"weights: read by each rank: (.*)", open(f"{work}/{name}.txt").read())
    assert line, f"{name}: no line of what each rank read"
    return [float(v) * units[u] for v, u in re.findall(r"([\d.]+) (B|KiB|MiB|GiB)", line.group(1))[:3]]
full, sliced = each_rank("plain_z0"), each_rank("plain_z3")
assert len(full) == 3 and all(abs(b - whole) <= 0.01 * whole for b in full), (full, whole)
assert len(sliced) == 3 and all(b < 0.6 * whole for b in sliced), (sliced, whole)
assert 0.97 * whole <= sum(sliced) <= 1.1 * whole, (sliced, whole)
print(f"bytes read of {whole}: zero 0 {full}, ZeRO-3 {sliced}")
PY
# A ddptrain checkpoint under ZeRO-3: exit 2, saying what to do instead.
rc=0
message=$("$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$gpt" "${model[@]}" --ddp.zero=3 \
  --model.init="$work/tuned/checkpoints/latest" --run.dir="$work/z3_checkpoint" \
  --train.steps=2 2>&1) || rc=$?
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for a ddptrain checkpoint as model.init under ZeRO-3: $message"
expect_message "is a ddptrain checkpoint: write it as safetensors first (ddptrain export)"
[[ ! -e $work/z3_checkpoint/metrics.h5 ]] || fail "a refused run wrote its metrics"

# A checkpoint and its export generate the same file.
"$ddptrain" export "$work/tuned/config.cfg" --checkpoint "$work/tuned/checkpoints/latest" \
  --output "$work/exported" >/dev/null || fail "export exited with $?"
"$ddptrain" generate "$work/tuned/config.cfg" --checkpoint "$work/tuned/checkpoints/latest" \
  --input "$work/prompts.h5" --output "$work/from_checkpoint.h5" --generate.max_new_tokens=4 \
  >/dev/null || fail "generate from the checkpoint"
"$ddptrain" generate "$work/tuned/config.cfg" --checkpoint "$work/exported" \
  --input "$work/prompts.h5" --output "$work/from_export.h5" --generate.max_new_tokens=4 \
  >/dev/null || fail "generate from the export"
# And under ZeRO-3 at 3 ranks, each rank reading its own slices of the export.
"$mpiexec" -np 3 --oversubscribe "$ddptrain" generate "$work/tuned/config.cfg" --ddp.zero=3 \
  --checkpoint "$work/exported" --input "$work/prompts.h5" --output "$work/from_export_z3.h5" \
  --generate.max_new_tokens=4 >"$work/z3_generate.log" 2>&1 ||
  fail "generate from the export under ZeRO-3: $(tail -3 "$work/z3_generate.log")"
grep -q "^weights: slices of $work/exported read in" "$work/z3_generate.log" ||
  fail "generate under ZeRO-3 did not read slices: $(grep weights "$work/z3_generate.log")"
"$python" - "$work" <<'PY' || fail "the export reads back other weights than the checkpoint's"
import sys, h5py, numpy as np
a, b, c = (h5py.File(f"{sys.argv[1]}/{n}.h5", "r")
           for n in ("from_checkpoint", "from_export", "from_export_z3"))
for d in ("tokens", "offsets", "finish", "logprobs"):
    assert np.array_equal(a[d][()], b[d][()]), d
# ZeRO-3 decodes the whole window each token (generate.sh): log-probabilities within 1e-5.
for d in ("tokens", "offsets", "finish"):
    assert np.array_equal(a[d][()], c[d][()]), d + " (ZeRO-3, 3 ranks)"
worst = np.max(np.abs(a["logprobs"][()] - c["logprobs"][()]))
assert worst <= 1e-5, f"/logprobs differ by {worst} (ZeRO-3, 3 ranks)"
PY

refused() {  # NAME TEXT [OPTION...]: model.init refused with exit 3 and TEXT, nothing written
  local name=$1 text=$2 rc=0
  shift 2
  message=$("$ddptrain" train "$gpt" --model.n_head=4 --model.vocab=256 --train.threads=1 \
    --run.dir="$work/refused_$name" --train.steps=2 "$@" 2>&1) || rc=$?
  [[ $rc -eq 3 ]] || fail "$name: exit $rc, not 3: $message"
  expect_message "$text"
  [[ ! -e $work/refused_$name/metrics.h5 ]] || fail "$name: a refused run wrote its metrics"
}
refused shape "tensor 'wte.weight' is [256, 32] there and [256, 64] in the deck's model" \
  --model.init="$work/plain.safetensors" --model.n_layer=2 --model.n_embd=64
refused unknown "the model has no transformer.h.1." --model.init="$work/prefixed.safetensors" \
  --model.tie=false --model.n_layer=1 --model.n_embd=32
refused missing "the file has no h.2.attn.c_attn.bias" --model.init="$work/plain.safetensors" \
  --model.n_layer=3 --model.n_embd=32
head -c 4000 "$work/plain.safetensors" >"$work/cut.safetensors"
refused truncated "a truncated file?" --model.init="$work/cut.safetensors" --model.n_layer=2 \
  --model.n_embd=32
# model.init_skip leaves what it names as initialised: a file without the model's third block,
# and a file with a block the model lacks, both train; a glob that matches nothing is exit 2.
skipped() {  # NAME [OPTION...]: trains, and says what it left as initialised
  local name=$1
  shift
  "$ddptrain" train "$gpt" --model.n_head=4 --model.vocab=256 --train.threads=1 \
    --run.dir="$work/skipped_$name" --train.steps=2 "$@" >"$work/skipped_$name.txt" 2>&1 ||
    { cat "$work/skipped_$name.txt"; fail "$name: model.init_skip did not let it train"; }
  grep -q "left as initialised (model.init_skip)" "$work/skipped_$name.txt" ||
    grep -q "read from" "$work/skipped_$name.txt" || fail "$name: no weights line"
}
skipped missing --model.init="$work/plain.safetensors" --model.n_layer=3 --model.n_embd=32 \
  --model.init_skip='h.2.*'
grep -q "; 12 left as initialised (model.init_skip)" "$work/skipped_missing.txt" ||
  fail "the third block's 12 tensors are not reported as left: $(grep weights: "$work/skipped_missing.txt")"
skipped unknown --model.init="$work/prefixed.safetensors" --model.tie=false --model.n_layer=1 \
  --model.n_embd=32 --model.init_skip='h.1.*'
rc=0
message=$("$ddptrain" train "$gpt" --model.n_head=4 --model.vocab=256 --train.threads=1 \
  --model.n_layer=2 --model.n_embd=32 --model.init="$work/plain.safetensors" \
  --model.init_skip='h.7.*' --run.dir="$work/skip_typo" --train.steps=2 2>&1) || rc=$?
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for a model.init_skip glob that matches nothing: $message"
expect_message "option 'model.init_skip': pattern 'h.7.*' matches no tensor"
[[ ! -e $work/skip_typo/metrics.h5 ]] || fail "a refused run wrote its metrics"
echo "model.init checks passed"
