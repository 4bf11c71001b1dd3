#!/usr/bin/env bash
# GPT training on CPU ranks: ddptrain (the GPT of share/ddptrain/models/gpt.py exported as
# TorchScript, model.type = torchscript) against PyTorch DDP (gloo, launched with mpirun) training
# the same Python GPT from the same initial weights on the same windows of the same token file, in
# the same order, with the same AdamW and learning rates (pytorch_ddp_gpt.py). At 1 and 2 ranks it
# prints samples/s of each, the ratio ddptrain / PyTorch, and the two loss curves side by side.
# With NATIVE=1 (default) it also runs ddptrain's built-in GPT (model.type = gpt) of the same
# size, initialised from run.seed by its own generator (so its curve starts from other weights).
# Not a test: it prints figures (the issue's target: >= 1.2x at 2 ranks, same curve within noise).
# These machines are noisy: the four configurations are run in turn, REPEATS times, and each
# figure is the median of its repeats; throughput leaves out the first min(5, STEPS / 5) steps on
# both sides (ddptrain's own rule) and both use THREADS intra-op threads per rank.
# Usage: share/dev/bench/gpt_ddp.sh [STEPS] [REPEATS]   (build first: share/dev/setup.sh)
# Environment (defaults): DDPTRAIN (build/bin/ddptrain), GPT_VOCAB (256), GPT_BLOCK (64),
#   GPT_LAYERS (4), GPT_HEADS (4), GPT_EMBD (128), BATCH (16 per rank), THREADS (1),
#   TOKENS (500000), PYTORCH_MODEL (eager: gpt.GPT in Python; scripted: the TorchScript module),
#   NATIVE (1), MPIRUN_ARGS (extra mpirun flags for every run, e.g. "--mca mpi_yield_when_idle 1").
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
python=/usr/bin/python3  # Debian's Python has torch 1.13 and h5py
steps=${1:-150}
repeats=${2:-3}
vocab=${GPT_VOCAB:-256} block=${GPT_BLOCK:-64} layers=${GPT_LAYERS:-4} heads=${GPT_HEADS:-4}
embd=${GPT_EMBD:-128} batch=${BATCH:-16} threads=${THREADS:-1} tokens=${TOKENS:-500000}
pytorch_model=${PYTORCH_MODEL:-eager}
native=${NATIVE:-1}
read -r -a mpirun_args <<<"${MPIRUN_ARGS:-}"
# One set of hyper-parameters for both sides (nanoGPT-like for a small model).
seed=1 lr=0.002 min_lr=0.0002 warmup=10 weight_decay=0.1 beta1=0.9 beta2=0.99 eps=1e-8
log_every=$(((steps + 9) / 10))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Both implementations unbound, so each rank's threads may use any core.
launch=(mpirun --oversubscribe --bind-to none "${mpirun_args[@]}" -np)
# shellcheck source=share/dev/bench/pytorch_malloc.sh
source "$repo/share/dev/bench/pytorch_malloc.sh"

"$ddptrain" make-data tokens --output "$tmp/tokens.h5" --tokens "$tokens" --vocab "$vocab" \
  --seed "$seed" >/dev/null
"$python" "$repo/share/ddptrain/models/gpt.py" --output "$tmp/gpt.pt" --vocab "$vocab" \
  --block "$block" --n-layer "$layers" --n-head "$heads" --n-embd "$embd" --seed "$seed"
cat >"$tmp/gpt.cfg" <<EOF
[run]
seed = $seed
[data]
type = tokens
path = $tmp/tokens.h5
block = $block
[model]
type = torchscript
path = $tmp/gpt.pt
[train]
batch_size = $batch
steps = $steps
threads = $threads
[optim]
type = adamw
lr = $lr
min_lr = $min_lr
warmup = $warmup
schedule = cosine
decay_steps = $steps
weight_decay = $weight_decay
beta1 = $beta1
beta2 = $beta2
eps = $eps
[log]
every = $log_every
EOF

run_id=0
# ddptrain's steady-state samples/s: the "done:" line of older builds, else the summary's
# "throughput : X samples/s".
steady_rate() { grep -oP '^done:.*?; \K[0-9.]+(?= samples/s)|throughput\s*: \K[0-9.]+' "$1"; }
ddptrain_rate() {  # ranks repeat -> global samples/s (steady state); metrics in $tmp/d$1_$2
  "${launch[@]}" "$1" "$ddptrain" train "$tmp/gpt.cfg" --run.dir="$tmp/d$1_$2" \
    >"$tmp/d$1_$2.txt"
  steady_rate "$tmp/d$1_$2.txt"
}
native_rate() {  # ranks repeat -> global samples/s of the built-in GPT; metrics in $tmp/n$1_$2
  [[ $native == 1 ]] || { echo nan; return; }
  "${launch[@]}" "$1" "$ddptrain" train "$tmp/gpt.cfg" --run.dir="$tmp/n$1_$2" --model.type=gpt \
    --model.n_layer="$layers" --model.n_head="$heads" --model.n_embd="$embd" \
    --model.block="$block" --model.vocab="$vocab" >"$tmp/n$1_$2.txt"
  steady_rate "$tmp/n$1_$2.txt"
}
pytorch_rate() {  # ranks repeat -> global samples/s (steady state); log in $tmp/p$1_$2.txt
  local scripted=()
  [[ $pytorch_model == scripted ]] && scripted=(--scripted)
  run_id=$((run_id + 1))
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29600 + run_id)) "${launch[@]}" "$1" "${pytorch_malloc[@]}" "$python" \
    "$repo/share/dev/bench/pytorch_ddp_gpt.py" "${scripted[@]}" --model "$tmp/gpt.pt" \
    --n-head "$heads" --data "$tmp/tokens.h5" --block "$block" --batch "$batch" \
    --steps "$steps" --seed "$seed" --threads "$threads" --lr "$lr" --min-lr "$min_lr" \
    --warmup "$warmup" --schedule cosine --decay-steps "$steps" --weight-decay "$weight_decay" \
    --beta1 "$beta1" --beta2 "$beta2" --eps "$eps" --log-every "$log_every" >"$tmp/p$1_$2.txt"
  grep -oP 'samples_per_s=\K[0-9.]+' "$tmp/p$1_$2.txt" | tail -1
}

# Each repeat runs the three implementations back to back at one rank count, then at the other,
# PyTorch first in odd repeats and last in even ones: the machine's speed drifts over minutes,
# and each ratio is also taken within its repeat (the "paired" columns).
for ((r = 1; r <= repeats; ++r)); do
  if ((r % 2)); then
    p1=$(pytorch_rate 1 "$r"); d1=$(ddptrain_rate 1 "$r"); n1=$(native_rate 1 "$r")
    p2=$(pytorch_rate 2 "$r"); d2=$(ddptrain_rate 2 "$r"); n2=$(native_rate 2 "$r")
  else
    d1=$(ddptrain_rate 1 "$r"); n1=$(native_rate 1 "$r"); p1=$(pytorch_rate 1 "$r")
    d2=$(ddptrain_rate 2 "$r"); n2=$(native_rate 2 "$r"); p2=$(pytorch_rate 2 "$r")
  fi
  echo "repeat $r: ddptrain $d1 / $d2, pytorch_ddp $p1 / $p2, ddptrain native $n1 / $n2" \
    "samples/s (1 / 2 ranks)"
  echo "$d1 $d2 $p1 $p2 $n1 $n2" >>"$tmp/rates.txt"
done

printf '\nGPT vocab %s, block %s, %s layers, %s heads, n_embd %s; AdamW, batch %s/rank,' \
  "$vocab" "$block" "$layers" "$heads" "$embd" "$batch"
printf ' %s thread(s)/rank,\n' "$threads"
printf '%s steps, median of %s, %s cores, load average %s; PyTorch side: %s model\n' "$steps" \
  "$repeats" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$pytorch_model"
"$python" - "$tmp" "$repeats" "$native" <<'EOF'
import math, re, statistics, sys
import h5py

tmp, repeats, native = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rates = [list(map(float, line.split())) for line in open(tmp + "/rates.txt")]
med = [statistics.median(col) for col in zip(*rates)]  # d1 d2 p1 p2 n1 n2


def train_rows(path):
    with h5py.File(path, "r", swmr=True) as f:
        t = f["train"]
        return {k: t[k][:] for k in ("step", "loss", "lr", "step_time_s", "comm_wait_s")}


print("%5s %13s %13s %7s %13s %7s %8s %8s %9s %9s" % (
    "ranks", "torchscript", "pytorch_ddp", "ratio", "native gpt", "ratio", "paired", "paired",
    "step ms", "wait ms"))
curves = {}
for i, ranks in enumerate((1, 2)):
    step_ms, wait_ms = [], []
    for r in range(1, repeats + 1):
        rows = train_rows("%s/d%d_%d/metrics.h5" % (tmp, ranks, r))
        step_ms += list(rows["step_time_s"][1:] * 1e3)  # the first row holds the JIT warm-up
        wait_ms += list(rows["comm_wait_s"][1:] * 1e3)
    curves["d%d" % ranks] = dict(zip(rows["step"].tolist(), rows["loss"].tolist()))
    curves["lr"] = dict(zip(rows["step"].tolist(), rows["lr"].tolist()))
    if native:
        rows = train_rows("%s/n%d_%d/metrics.h5" % (tmp, ranks, repeats))
        curves["n%d" % ranks] = dict(zip(rows["step"].tolist(), rows["loss"].tolist()))
    log = open("%s/p%d_%d.txt" % (tmp, ranks, repeats)).read()
    curves["p%d" % ranks] = {int(s): float(l)
                             for s, l in re.findall(r"LOG step=(\d+) loss=(\S+)", log)}
    d, p, n = med[i], med[2 + i], med[4 + i]
    paired_d = statistics.median(row[i] / row[2 + i] for row in rates)
    paired_n = statistics.median(row[4 + i] / row[2 + i] for row in rates)
    print("%5d %13.1f %13.1f %6.2fx %13.1f %6.2fx %7.2fx %7.2fx %9.1f %9.2f" % (
        ranks, d, p, d / p, n, n / p, paired_d, paired_n, statistics.median(step_ms),
        statistics.median(wait_ms)))
print("samples/s: steady state, median of the repeats; ratio: ddptrain / pytorch_ddp of those;\n"
      "paired: median over the repeats of each repeat's own ratio (torchscript, native gpt);\n"
      "step ms, wait ms: step_time_s, comm_wait_s of the TorchScript runs (metrics.h5),\n"
      "median over the log intervals after the first")
print("\nloss (mean over the log interval and the ranks), last repeat")
cols = ["d1", "p1", "d2", "p2"] + (["n1", "n2"] if native else [])
print("%6s %9s %10s %10s %8s %10s %10s %8s" % ("step", "lr", "ts@1", "pytorch@1", "diff",
                                              "ts@2", "pytorch@2", "diff")
      + ("%10s %10s" % ("native@1", "native@2") if native else ""))
for s in sorted(curves["d1"]):
    v = {k: curves[k].get(s, math.nan) for k in cols}
    print("%6d %9.2e %10.5f %10.5f %8.1e %10.5f %10.5f %8.1e" % (
        s, curves["lr"][s], v["d1"], v["p1"], v["d1"] - v["p1"], v["d2"], v["p2"],
        v["d2"] - v["p2"]) + ("%10.5f %10.5f" % (v["n1"], v["n2"]) if native else ""))
EOF
