#!/usr/bin/env bash
# Training on a GPU against the same runs on the CPU, one rank (NCCL backend on the GPU): the
# checks a CUDA build can only pass on a machine with a GPU (share/dev/gpu/build_and_test.sh runs
# it there; elsewhere it reports "[  SKIPPED ]" and ctest counts it as skipped, not passed).
#  - fp32: 30 steps on the GPU end within 1e-4 (relative, per parameter) of the same 30 steps on
#    the CPU, with SGD and with AdamW;
#  - the GPU run's summary splits its step on the GPU (CUDA events): the phases add up (never run
#    on a GPU yet);
#  - bf16 (autocast): a small GPT's logged loss falls by a fifth over 100 steps;
#  - fp16 with dynamic loss scaling: an initial scale of 1e30 overflows the first step, which is
#    skipped (skipped_steps = 1) and backs the scale off to 1e4 (x 1e-26); the loss still falls;
#  - ddp.compress = bf16 on one rank changes nothing (nothing goes on a wire; never run on a GPU
#    yet; two ranks round: gpu_two_ranks.sh); ddp.zero = 1 on one rank ends within 1e-6 of
#    ddp.zero = 0;
#  - a step of the deck's MLP in bf16 with AdamW and clipping makes the host wait nowhere (LibTorch's CUDA sync
#    debug mode as an error, DDPTRAIN_TEST_NO_HOST_SYNC=1), with the checks on the device; with
#    train.step_checks = host the same run fails there (the check can tell; never run on a GPU
#    yet);
#  - a GPU checkpoint resumed on the CPU, and a CPU checkpoint resumed on the GPU, continue the
#    run they came from within 1e-4;
#  - a GPT with dropout resumed at step 10 ends within 1e-5 of the run it continues (the CUDA
#    generator is in the checkpoint); without /rng/torch_cuda it ends more than 1e-3 away;
#  - train.deterministic = true runs on the GPU (cuBLAS's workspace setting) and repeats exactly;
#  - more ranks on the node than GPUs is refused with exit code 2;
#  - a GPU out of memory is exit code 6 and one error line naming the batch size;
#  - train.batch_size = auto finds a size that trains, and one sample more did not fit (never run
#    on a GPU yet);
#  - `ddptrain bench comm` runs on NCCL with CUDA tensors and checks its results (never run on a
#    GPU yet).
# The CPU runs hide the GPU with CUDA_VISIBLE_DEVICES=''. Checkpoints are read with h5py
# ($DDPTRAIN_PYTHON, default /usr/bin/python3).
# Usage: gpu_training.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/gpu_checks.sh"

# train DIR [OPTION...]: one rank, the deck's MLP on 4096 samples, a checkpoint every 10 steps.
train() {
  local dir=$1
  shift
  "$mpiexec" -np 1 "$ddptrain" train "$deck" --data.samples=4096 --train.steps=30 \
    --log.every=1 --checkpoint.every=10 --run.dir="$work/$dir" "$@" >"$work/$dir.log" 2>&1 ||
    { echo "run $dir failed:"; tail -30 "$work/$dir.log"; return 1; }
}
on_cpu() { CUDA_VISIBLE_DEVICES='' "$@"; }
# loss_falls DIR FACTOR: the last logged loss is below FACTOR x the first.
loss_falls() {
  "$python" - "$work/$1/metrics.h5" "$2" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    loss = f["train/loss"][:]
print(f"loss {loss[0]:.4f} -> {loss[-1]:.4f} over {len(loss)} rows")
sys.exit(0 if loss[-1] < float(sys.argv[2]) * loss[0] else 1)
PY
}
on_gpu_banner() { grep -q "cuda" "$work/$1.log" || { echo "$1 did not run on the GPU"; return 1; }; }

fp32_matches_cpu() {
  local opt=$1
  shift
  train "gpu_$opt" "$@" && on_gpu_banner "gpu_$opt" && on_cpu train "cpu_$opt" "$@" &&
    within "cpu_$opt" "gpu_$opt" 30 1e-4
}
check "fp32 SGD: GPU = CPU" fp32_matches_cpu sgd --optim.type=sgd --optim.lr=0.05
check "fp32 AdamW: GPU = CPU" fp32_matches_cpu adamw --optim.type=adamw

# The summary of a GPU run splits its step on the GPU (CUDA events where the host laps): every
# phase, comm wait too (the stream's waits for the collectives, marked by the engine's waits),
# none negative, forward and backward not empty, adding up to the total.
gpu_step_split() {
  local line
  line=$(grep "step time (GPU)" "$work/gpu_adamw.log") || { echo "no GPU step split"; return 1; }
  echo "$line"
  "$python" - "$line" <<'PY'
import re
import sys
line = sys.argv[1]
total = float(re.search(r"([\d.]+) ms per step", line).group(1))
parts = {name: float(ms) for name, ms in re.findall(
    r"(forward|backward|comm wait|optimizer|data|zero\+sync|between steps) (-?[\d.]+) \(", line)}
expected = {"forward", "backward", "comm wait", "optimizer", "data", "zero+sync", "between steps"}
ok = (set(parts) == expected and min(parts.values()) >= 0 and parts["forward"] > 0 and
      parts["backward"] > 0 and abs(sum(parts.values()) - total) <= 0.05)
print(f"phases {sorted(parts)}, sum {sum(parts.values()):.2f} of {total:.2f} ms")
sys.exit(0 if ok else 1)
PY
}
check "GPU step split: CUDA events, the phases add up" gpu_step_split

bf16_loss_falls() {
  "$mpiexec" -np 1 "$ddptrain" train "$deck" --data.type=synthetic_tokens --data.vocab=64 \
    --data.block=64 --data.samples=2048 --model.type=gpt --model.n_layer=2 --model.n_embd=128 \
    --train.batch_size=32 --train.steps=100 --log.every=10 --optim.lr=0.003 \
    --train.precision=bf16 --run.dir="$work/bf16" >"$work/bf16.log" 2>&1 &&
    on_gpu_banner bf16 && loss_falls bf16 0.8
}
check "bf16 GPT: loss falls" bf16_loss_falls

fp16_overflow_then_trains() {
  train fp16 --train.precision=fp16 --train.loss_scale=1e30 --train.scale_backoff=1e-26 &&
    "$python" - "$work/fp16" <<'PY'
import sys
import h5py
run = sys.argv[1]
with h5py.File(f"{run}/metrics.h5", "r") as f:
    skipped = int(f["train/skipped_steps"][:].max())
    loss = f["train/loss"][:]
with h5py.File(f"{run}/checkpoints/step_00000030.h5", "r") as f:
    scale = float(f["loop"].attrs["loss_scale"])
print(f"skipped steps {skipped}, loss scale after the run {scale:g}, loss {loss[1]:.4f} -> {loss[-1]:.4f}")
ok = skipped == 1 and abs(scale - 1e4) <= 1e-6 * 1e4 and loss[-1] < loss[1]
sys.exit(0 if ok else 1)
PY
}
check "fp16: overflow skipped, scale backed off, loss falls" fp16_overflow_then_trains

compress_alone_changes_nothing() {
  local d
  train wire_fp32 --optim.type=sgd --optim.lr=0.05 &&
    train wire_bf16 --optim.type=sgd --optim.lr=0.05 --ddp.compress=bf16 &&
    d=$(difference wire_fp32 wire_bf16 30) || return 1
  echo "ddp.compress = bf16 against fp32, one rank: max relative difference $d"
  "$python" -c "import sys; sys.exit(0 if $d == 0 else 1)"
}
check "ddp.compress = bf16 on one rank: nothing on a wire, nothing rounded" compress_alone_changes_nothing

# no_sync_step DIR [OPTION...]: the deck's MLP in bf16, AdamW clipped at 0.1, 12 steps with rows
# at 6 and 12, every step under LibTorch's sync debug mode as an error. (The MLP: ddptrain's step
# machinery, not what a model's own kernels may wait for.)
no_sync_step() {
  local dir=$1
  shift
  DDPTRAIN_TEST_NO_HOST_SYNC=1 "$mpiexec" -np 1 "$ddptrain" train "$deck" --data.samples=4096 \
    --train.steps=12 --log.every=6 --optim.type=adamw --optim.clip=0.1 --train.precision=bf16 \
    --run.dir="$work/$dir" "$@" >"$work/$dir.log" 2>&1
}
step_waits_for_nothing() {
  no_sync_step no_sync ||
    { echo "a step made the host wait:"; grep -m3 -i "error\|synchroniz" "$work/no_sync.log"; return 1; }
  on_gpu_banner no_sync || return 1
  if no_sync_step no_sync_host --train.step_checks=host; then
    echo "with the checks on the host the run passed: the sync check sees nothing"
    return 1
  fi
  echo "checks on the host: $(grep -m1 -i "synchroniz" "$work/no_sync_host.log")"
  grep -qi "synchroniz" "$work/no_sync_host.log"
}
check "a GPU step makes the host wait nowhere (train.step_checks on the device)" step_waits_for_nothing

zero_matches_plain() { train zero1 --ddp.zero=1 && train zero0 && within zero0 zero1 30 1e-6; }
check "ddp.zero = 1 on NCCL = ddp.zero = 0" zero_matches_plain

gpu_checkpoint_on_cpu() {
  train from_gpu --optim.type=sgd --optim.lr=0.05 &&
    on_cpu train gpu_then_cpu --optim.type=sgd --optim.lr=0.05 \
      --train.resume="$work/from_gpu/checkpoints/step_00000010.h5" &&
    within from_gpu gpu_then_cpu 30 1e-4
}
check "GPU checkpoint resumed on the CPU" gpu_checkpoint_on_cpu
cpu_checkpoint_on_gpu() {
  on_cpu train from_cpu --optim.type=sgd --optim.lr=0.05 &&
    train cpu_then_gpu --optim.type=sgd --optim.lr=0.05 \
      --train.resume="$work/from_cpu/checkpoints/step_00000010.h5" &&
    on_gpu_banner cpu_then_gpu && within from_cpu cpu_then_gpu 30 1e-4
}
check "CPU checkpoint resumed on the GPU" cpu_checkpoint_on_gpu

# A GPT with dropout, 20 steps, resumed at step 10: the CUDA generator's state comes back with the
# checkpoint, so the resumed run draws the same masks. The same resume from a copy without
# /rng/torch_cuda (deleted with h5py) must end further away: the check can tell.
dropout_gpt() {
  local dir=$1
  shift
  "$mpiexec" -np 1 "$ddptrain" train "$deck" --data.type=synthetic_tokens --data.vocab=64 \
    --data.block=64 --data.samples=1024 --model.type=gpt --model.n_layer=2 --model.n_embd=64 \
    --model.dropout=0.1 --train.batch_size=16 --train.steps=20 --checkpoint.every=10 \
    --run.dir="$work/$dir" "$@" >"$work/$dir.log" 2>&1 ||
    { echo "run $dir failed: $(grep -m3 "error" "$work/$dir.log" || tail -3 "$work/$dir.log")"; return 1; }
}
dropout_resume_matches() {
  local d
  dropout_gpt whole && dropout_gpt resumed --train.resume="$work/whole/checkpoints/step_00000010.h5" &&
    cp "$work/whole/checkpoints/step_00000010.h5" "$work/no_cuda_rng.h5" &&
    "$python" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); del f['rng/torch_cuda']" \
      "$work/no_cuda_rng.h5" &&
    dropout_gpt resumed_without --train.resume="$work/no_cuda_rng.h5" &&
    within whole resumed 20 1e-5 && d=$(difference whole resumed_without 20) || return 1
  echo "without the CUDA generator's state: max relative difference $d"
  "$python" -c "import sys; sys.exit(0 if $d > 1e-3 else 1)"
}
check "GPU dropout: a resumed run draws the same masks" dropout_resume_matches

deterministic_is_repeatable() {
  local d
  train det_a --train.deterministic=true && train det_b --train.deterministic=true &&
    d=$(difference det_a det_b 30) || return 1
  echo "two runs with train.deterministic = true: max relative difference $d"
  "$python" -c "import sys; sys.exit(0 if $d == 0 else 1)"
}
check "train.deterministic on the GPU: runs, and repeats bit for bit" deterministic_is_repeatable

more_ranks_than_gpus_refused() {
  local gpus rc
  gpus=$("$python" -c "import torch; print(torch.cuda.device_count())") || return 1
  "$mpiexec" -np $((gpus + 1)) --oversubscribe "$ddptrain" train "$deck" --train.steps=2 \
    --run.dir="$work/shared_gpu" >"$work/shared_gpu.log" 2>&1
  rc=$?
  echo "$((gpus + 1)) ranks on $gpus GPU(s): exit code $rc; $(grep -m1 "ddptrain: error:" "$work/shared_gpu.log")"
  [[ $rc -eq 2 ]] && grep -q "$((gpus + 1)) ranks on this node but $gpus GPU(s) visible" "$work/shared_gpu.log"
}
check "more ranks than GPUs on a node: refused, exit 2" more_ranks_than_gpus_refused

out_of_memory_is_exit_6() {
  local rc errors
  # Logits of 4096 x 1024 tokens x 32768 classes: 550 GB in fp32, more than any GPU holds.
  "$mpiexec" -np 1 "$ddptrain" train "$deck" --data.type=synthetic_tokens --data.vocab=32768 \
    --data.block=1024 --data.samples=4096 --model.type=gpt --model.n_layer=1 \
    --model.n_embd=256 --train.batch_size=4096 --train.steps=2 --run.dir="$work/oom" \
    >"$work/oom.log" 2>&1
  rc=$?
  errors=$(grep -c "ddptrain: error:" "$work/oom.log")
  echo "exit code $rc; $(grep "ddptrain: error:" "$work/oom.log")"
  [[ $rc -eq 6 && $errors -eq 1 ]] && grep -q "out of GPU memory in step 1 at train.batch_size = 4096" "$work/oom.log"
}
check "CUDA out of memory: exit 6 naming the batch size" out_of_memory_is_exit_6

auto_batch_fits_and_trains() {
  local found line
  # Logits of 1024 tokens x 32768 classes per sample: some hundred samples fill the GPU, far
  # below the 4096 that the data would allow.
  "$mpiexec" -np 1 "$ddptrain" train "$deck" --data.type=synthetic_tokens --data.vocab=32768 \
    --data.block=1024 --data.samples=4096 --model.type=gpt --model.n_layer=1 \
    --model.n_embd=256 --train.batch_size=auto --train.steps=3 --log.every=1 \
    --run.dir="$work/auto_batch" >"$work/auto_batch.log" 2>&1 ||
    { echo "run failed:"; tail -5 "$work/auto_batch.log"; return 1; }
  line=$(grep -m1 "train.batch_size = auto: [0-9]* (tried" "$work/auto_batch.log") || return 1
  found=$(sed -E 's/.*auto: ([0-9]+) \(tried.*/\1/' <<<"$line")
  echo "$line"
  # The size found trained 3 steps (its optimizer state too), and one sample more did not fit.
  grep -q "batch *: $found per rank (auto" "$work/auto_batch.log" &&
    [[ " ${line#*tried } " == *" $((found + 1))x"* ]]
}
check "train.batch_size = auto: the largest that fits, and it trains" auto_batch_fits_and_trains

bench_comm_on_nccl() {
  "$mpiexec" -np 1 "$ddptrain" bench comm --max-bytes 64MiB >"$work/bench_comm.log" 2>&1 ||
    { tail -5 "$work/bench_comm.log"; return 1; }
  grep -E "backend|64 MiB|checked" "$work/bench_comm.log"
  grep -q "backend nccl, 1 ranks on 1 node(s), device cuda" "$work/bench_comm.log" &&
    grep -q "all results checked on every rank" "$work/bench_comm.log"
}
check "ddptrain bench comm on NCCL (one rank: busbw is 0 by definition)" bench_comm_on_nccl

report_checks "gpu training checks"
