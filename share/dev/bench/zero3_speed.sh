#!/usr/bin/env bash
# ZeRO-3's speed on CPU ranks: the built-in GPT at 2 ranks with ddp.zero = 1, and ddp.zero = 3
# as it runs by default on one node (units gathered in node-shared memory, no prefetch), and
# through MPI_Allgather (ddp.shared_memory = false, as across nodes) with prefetch
# (ddp.prefetch = on) and without (off, the MPI backend's default), in turns, REPEATS rounds,
# each figure the median of its rounds with the range, and the ratios within each round
# ("paired"). The issue's target: ZeRO-3 at least 0.85x of ZeRO-1's samples/s.
# Anchor, where the Debian 13 root of share/dev/ci/libtorch2_cpu.sh exists: PyTorch 2.6's FSDP
# (each Block a unit, use_orig_params) and DDP, gloo, on the same architecture
# (share/ddptrain/models/gpt.py, pytorch_ddp_gpt.py --fsdp) and the same token file, in the same
# rounds. Its weights start elsewhere (the Python GPT's initialisation); compare speeds, not losses.
# Not a test: it prints figures. Build first (share/dev/setup.sh); run nothing else meanwhile.
# Usage: share/dev/bench/zero3_speed.sh [STEPS] [REPEATS]
# Environment (defaults): DDPTRAIN (build/bin/ddptrain), GPT_LAYERS (8), GPT_EMBD (256),
#   GPT_HEADS (4), GPT_BLOCK (64), GPT_VOCAB (256), BATCH (16 per rank), THREADS (1).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
steps=${1:-60}
repeats=${2:-3}
layers=${GPT_LAYERS:-8} embd=${GPT_EMBD:-256} heads=${GPT_HEADS:-4} block=${GPT_BLOCK:-64}
vocab=${GPT_VOCAB:-256} batch=${BATCH:-16} threads=${THREADS:-1}
root13=${DDPTRAIN_DEBIAN13_DIR:-/var/cache/ddptrain/debian13}/cpu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Inside the checkout: the Debian 13 root sees the checkout (at the same path), not /tmp.
work=$repo/build/bench-zero3
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

"$ddptrain" make-data tokens --output "$work/tokens.h5" --tokens 400000 --vocab "$vocab" \
  --seed 1 >/dev/null
gpt=(--model.type=gpt --model.n_layer="$layers" --model.n_embd="$embd" --model.n_head="$heads"
     --model.block="$block" --model.vocab="$vocab")
ddptrain_rate() {  # NAME OPTIONS... -> global samples/s after the warm-up steps
  local name=$1
  shift
  mpirun -np 2 --oversubscribe --bind-to none "$ddptrain" train "$repo/inputs/gpt_tokens.cfg" \
    --data.type=tokens --data.path="$work/tokens.h5" --data.block="$block" \
    --data.val_fraction=0 "${gpt[@]}" --train.batch_size="$batch" --train.global_batch=0 \
    --train.steps="$steps" --train.threads="$threads" --eval.every=0 --log.every="$steps" \
    --log.progress=lines --run.dir="$work/$name" "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt" >&2; exit 1; }
  grep -oP 'throughput\s*: \K[0-9.]+' "$work/$name.txt"
}
anchor=0
if [[ -x $root13/usr/bin/python3 && -d $root13/usr/lib/python3/dist-packages/torch ]]; then
  anchor=1
  /usr/bin/python3 "$repo/share/ddptrain/models/gpt.py" --output "$work/gpt.pt" --vocab "$vocab" \
    --block "$block" --n-layer "$layers" --n-head "$heads" --n-embd "$embd" --seed 1 >/dev/null
fi
port=29700
pytorch_rate() {  # fsdp|ddp -> global samples/s after the warm-up steps, PyTorch 2.6
  [[ $anchor == 1 ]] || { echo nan; return; }
  local mode=() impl=$1
  [[ $impl == fsdp ]] && mode=(--fsdp)
  port=$((port + 1))
  bash "$repo/share/dev/ci/debian13.sh" cpu env OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 USE_LIBUV=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    mpirun -np 2 --oversubscribe --bind-to none python3 \
    "$repo/share/dev/bench/pytorch_ddp_gpt.py" "${mode[@]}" --model "$work/gpt.pt" \
    --n-head "$heads" --data "$work/tokens.h5" --block "$block" --batch "$batch" \
    --steps "$steps" --threads "$threads" --lr 0.002 --warmup 10 --weight-decay 0.1 \
    --log-every "$steps" >"$work/$impl.txt" 2>&1 || { cat "$work/$impl.txt" >&2; exit 1; }
  grep -oP 'samples_per_s=\K[0-9.]+' "$work/$impl.txt" | tail -1
}

for ((r = 1; r <= repeats; ++r)); do
  mpi=(--ddp.zero=3 --ddp.shared_memory=false)
  if ((r % 2)); then
    z1=$(ddptrain_rate z1 --ddp.zero=1); z3s=$(ddptrain_rate z3s --ddp.zero=3)
    z3=$(ddptrain_rate z3 "${mpi[@]}" --ddp.prefetch=on)
    z3n=$(ddptrain_rate z3n "${mpi[@]}" --ddp.prefetch=off)
    fsdp=$(pytorch_rate fsdp); ddp=$(pytorch_rate ddp)
  else
    ddp=$(pytorch_rate ddp); fsdp=$(pytorch_rate fsdp)
    z3n=$(ddptrain_rate z3n "${mpi[@]}" --ddp.prefetch=off)
    z3=$(ddptrain_rate z3 "${mpi[@]}" --ddp.prefetch=on)
    z3s=$(ddptrain_rate z3s --ddp.zero=3); z1=$(ddptrain_rate z1 --ddp.zero=1)
  fi
  echo "round $r: ZeRO-1 $z1, ZeRO-3 $z3s; through MPI with prefetch $z3, without $z3n;" \
    "PyTorch 2.6 FSDP $fsdp, DDP $ddp samples/s"
  echo "$z1 $z3 $z3n $fsdp $ddp $z3s" >>"$work/rates.txt"
done
printf 'GPT %s layers x %s wide, %s heads, context %s, vocab %s; AdamW; %s/rank, 2 ranks, ' \
  "$layers" "$embd" "$heads" "$block" "$vocab" "$batch"
printf '%s thread(s)/rank; %s steps, %s rounds; %s cores, load %s\n' "$threads" "$steps" \
  "$repeats" "$(nproc --all)" "$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rates.txt" <<'PY'
import math, statistics, sys
rows = [[float(v) for v in line.split()] for line in open(sys.argv[1])]
names = ["ddptrain ZeRO-1", "ddptrain ZeRO-3, MPI, prefetch", "ddptrain ZeRO-3, MPI, no prefetch",
         "PyTorch 2.6 FSDP", "PyTorch 2.6 DDP", "ddptrain ZeRO-3 (node-shared)"]
for i, name in enumerate(names):
    col = [r[i] for r in rows]
    if any(math.isnan(v) for v in col):
        print(f"{name:30s} not run (no Debian 13 root with PyTorch)")
        continue
    print(f"{name:30s} {statistics.median(col):9.1f} samples/s ({min(col):.1f}-{max(col):.1f})")
def paired(i, j, what):
    ratios = [r[i] / r[j] for r in rows]
    if any(math.isnan(v) for v in ratios):
        return
    print(f"{what:45s} {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
paired(5, 0, "ZeRO-3 (node-shared) / ZeRO-1, paired (target >= 0.85)")
paired(2, 0, "ZeRO-3 (MPI, no prefetch) / ZeRO-1, paired")
paired(1, 0, "ZeRO-3 (MPI, prefetch) / ZeRO-1, paired")
paired(5, 2, "node-shared / MPI (no prefetch), paired")
paired(1, 2, "MPI: prefetch on / off, paired")
paired(5, 3, "ddptrain ZeRO-3 (node-shared) / PyTorch FSDP, paired")
paired(3, 4, "PyTorch FSDP / PyTorch DDP, paired")
PY
