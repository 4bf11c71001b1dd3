#!/usr/bin/env bash
# Two NCCL ranks on one GPU: the multi-rank logic and numerics of the NCCL path on a machine with
# one GPU (not its speed). NCCL refuses two ranks on one GPU of one host; each rank here sets its
# own NCCL_HOSTID, so NCCL takes them for two one-GPU hosts joined over sockets on lo, and
# DDPTRAIN_TEST_SHARE_GPU=1 lifts ddptrain's own one-rank-per-GPU refusal (a test switch: the
# refusal stays the default; gpu_training.sh checks it). None of these checks has run on a GPU yet.
#  - fp32, the same global batch: 2 ranks end within 1e-5 (SGD) and 1e-4 (AdamW) of 1 rank after
#    30 steps (relative, per parameter; the sums run in another order);
#  - ddp.zero = 1 (reduce-scatter and all-gather over NCCL) within 1e-6 of ddp.zero = 0; ddp.zero =
#    2 too, with gradient accumulation (reduced into the shards at every micro-step); ddp.zero = 3
#    too, with gradient accumulation and without prefetch;
#  - ddp.compress = bf16 rounds what goes on the wire: 0 < difference < 1e-2;
#  - a checkpoint of 2 ranks continued on 1, and one of 1 rank continued on 2, end within 1e-5 of
#    the run they came from;
#  - `bench comm` on 2 NCCL ranks: busbw = algbw x the op's factor, every result checked;
#  - one rank stopped (SIGSTOP) after step 100: the job ends with exit 5 (a 120 s guard ends a
#    hang), the report naming rank 1.
# Usage: gpu_two_ranks.sh MPIEXEC DDPTRAIN DECK
set -uo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/gpu_checks.sh"

export DDPTRAIN_TEST_SHARE_GPU=1 NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1

# ranks N ARG...: N ranks of ddptrain ARG..., each with its own NCCL_HOSTID (bash execs ddptrain,
# so each rank keeps the pid mpirun started).
ranks() {
  "$mpiexec" -np "$1" --oversubscribe --bind-to none \
    bash -c 'NCCL_HOSTID=ddptrain-test-$OMPI_COMM_WORLD_RANK exec "$@"' ddptrain "$ddptrain" "${@:2}"
}
# train DIR N [OPTION...]: N ranks, the deck's MLP on 4096 samples, 64 a step over all ranks, a
# checkpoint every 10 steps.
train() {
  local dir=$1 n=$2
  shift 2
  ranks "$n" train "$deck" --data.samples=4096 --train.steps=30 --train.global_batch=64 \
    --log.every=10 --checkpoint.every=10 --run.dir="$work/$dir" "$@" >"$work/$dir.log" 2>&1 ||
    { echo "run $dir failed:"; tail -30 "$work/$dir.log"; return 1; }
  grep -q "cuda" "$work/$dir.log" || { echo "$dir did not run on the GPU"; return 1; }
}

two_equal_one() {
  local opt=$1 limit=$2
  shift 2
  train "one_$opt" 1 "$@" && train "two_$opt" 2 "$@" && within "one_$opt" "two_$opt" 30 "$limit"
}
check "fp32 SGD: 2 NCCL ranks = 1 rank" two_equal_one sgd 1e-5 --optim.type=sgd --optim.lr=0.05
check "fp32 AdamW: 2 NCCL ranks = 1 rank" two_equal_one adamw 1e-4 --optim.type=adamw

zero_matches_plain() {
  train two_zero1 2 --ddp.zero=1 && within two_adamw two_zero1 30 1e-6
}
check "ddp.zero = 1 over 2 NCCL ranks = ddp.zero = 0" zero_matches_plain

# ZeRO-2 on NCCL: pooled buckets reused across the NCCL stream, small buckets so that several
# borrow at once, and gradient accumulation in the shards.
zero2_matches_plain() {
  train two_zero2 2 --ddp.zero=2 --ddp.bucket_mb=0.01 --ddp.first_bucket_mb=0.01 &&
    within two_adamw two_zero2 30 1e-6 &&
    train two_accum 2 --train.grad_accum=2 &&
    train two_zero2_accum 2 --train.grad_accum=2 --ddp.zero=2 --ddp.bucket_mb=0.01 &&
    within two_accum two_zero2_accum 30 1e-6
}
check "ddp.zero = 2 over 2 NCCL ranks = ddp.zero = 0, with and without grad_accum" \
  zero2_matches_plain

# ZeRO-3 on NCCL: each hidden layer's parameters all-gathered before it runs (the next one
# prefetched on the NCCL stream) and released after, gathered again for backward.
zero3_matches_plain() {
  train two_zero3 2 --ddp.zero=3 && within two_adamw two_zero3 30 1e-6 &&
    train two_zero3_accum 2 --train.grad_accum=2 --ddp.zero=3 &&
    within two_accum two_zero3_accum 30 1e-6 &&
    train two_zero3_serial 2 --ddp.zero=3 --ddp.prefetch=off &&
    within two_adamw two_zero3_serial 30 1e-6
}
check "ddp.zero = 3 over 2 NCCL ranks = ddp.zero = 0, with grad_accum, without prefetch" \
  zero3_matches_plain

compress_rounds() {
  local d
  train two_bf16_wire 2 --optim.type=sgd --optim.lr=0.05 --ddp.compress=bf16 &&
    d=$(difference two_sgd two_bf16_wire 30) || return 1
  echo "ddp.compress = bf16 over 2 ranks against fp32: max relative difference $d"
  "$python" -c "import sys; sys.exit(0 if 0 < $d < 1e-2 else 1)"
}
check "ddp.compress = bf16 over 2 NCCL ranks rounds the wire" compress_rounds

resumed_on_other_counts() {
  train two_then_one 1 --optim.type=sgd --optim.lr=0.05 \
    --train.resume="$work/two_sgd/checkpoints/step_00000010.h5" &&
    within two_sgd two_then_one 30 1e-5 &&
    train one_then_two 2 --optim.type=sgd --optim.lr=0.05 \
      --train.resume="$work/one_sgd/checkpoints/step_00000010.h5" &&
    within one_sgd one_then_two 30 1e-5
}
check "a checkpoint continues on another rank count (2 -> 1, 1 -> 2)" resumed_on_other_counts

bench_comm_two_ranks() {
  ranks 2 bench comm --max-bytes 64MiB >"$work/bench_comm.log" 2>&1 ||
    { tail -5 "$work/bench_comm.log"; return 1; }
  grep -E "backend|64 MiB|checked" "$work/bench_comm.log"
  grep -q "backend nccl, 2 ranks" "$work/bench_comm.log" &&
    grep -q "all results checked on every rank" "$work/bench_comm.log" &&
    awk '/through node-shared memory/ { exit }  # the second table of the MPI backend
         $1 ~ /^(all_reduce|reduce_scatter|all_gather)$/ && $2 == 64 && $3 == "MiB" {
           factor = $1 == "all_reduce" ? 1 : 0.5; rows++
           # awk reads "nan" and "inf" as numbers that the comparisons below let through.
           for (f = 4; f <= 7; f++) if ($f !~ /^[0-9]+(\.[0-9]+)?$/) { bad = 1; next }
           if ($7 + 0 <= 0 || ($7 - $6 * factor) > 0.0011 || ($6 * factor - $7) > 0.0011) bad = 1
         }
         END { exit (rows == 3 && !bad) ? 0 : 1 }' "$work/bench_comm.log"
}
check "bench comm on 2 NCCL ranks: busbw, results checked" bench_comm_two_ranks

stopped_peer_ends_the_job() {
  local launcher stopped rc start took timeout_s=5
  # Not through ranks(): the background job must be mpirun itself, whose children are the ranks.
  "$mpiexec" -np 2 --oversubscribe --bind-to none \
    bash -c 'NCCL_HOSTID=ddptrain-test-$OMPI_COMM_WORLD_RANK exec "$@"' ddptrain "$ddptrain" \
    train "$deck" --run.dir="$work/stopped" --train.steps=1000000 --checkpoint.every=100 \
    --dist.timeout_s=$timeout_s >"$work/stopped.log" 2>&1 &
  launcher=$!
  wait_for_file "$work/stopped/checkpoints/step_00000100.h5" 120 ||
    { kill -KILL "$launcher"; echo "training did not start"; tail -5 "$work/stopped.log"; return 1; }
  # The rank is bash's exec'd ddptrain: mpirun's child with OMPI_COMM_WORLD_RANK=1.
  stopped=$(rank_pid "$launcher" 1) || { kill -KILL "$launcher"; echo "no rank 1"; return 1; }
  kill -STOP "$stopped"
  start=$SECONDS
  wait_guarded "$launcher" 120 ||
    { kill -KILL "$stopped"; echo "still running after 120 s: it hung"; return 1; }
  took=$((SECONDS - start))
  kill -KILL "$stopped" 2>/dev/null
  echo "exit code $rc after $took s"
  grep -A4 "collective timed out" "$work/stopped.log"
  [[ $rc -eq 5 ]] && grep -q "^ranks that did not arrive: 1$" "$work/stopped.log"
}
check "a stopped NCCL peer ends the job: exit 5, naming rank 1" stopped_peer_ends_the_job

report_checks "two-rank NCCL checks"
