#!/usr/bin/env bash
# Gradient buckets summed in node-shared memory (ddp.shared_memory, src/comm/node_all_reduce.cpp),
# as users run it, at 2 ranks on one node:
#  - on by default: the banner says so, and the run trains the same parameters, bit for bit, as
#    with ddp.shared_memory = false (MPI_Allreduce; at 2 ranks a + b is b + a);
#  - ZeRO-1 (ddp.zero = 1): the buckets reduce-scattered there and one shared copy of the
#    parameters, as the banner says; it trains the parameters of the plain run to rounding (the
#    optimizer's arithmetic on 1-D pieces may round differently), and not with a moving average.
# A /dev/shm too small for the buckets: shared_memory_buckets_small_dev_shm.sh (root).
# Usage: shared_memory_buckets.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
readonly kSteps=30
final=checkpoints/step_$(printf %08d $kSteps).h5
check_run=$(dirname "$(readlink -f "$0")")/../cluster/check_run.py

# train NAME [OPTION...]: 2 ranks, output in $work/NAME.txt, run.dir $work/NAME.
train() {
  local name=$1 rc=0
  shift
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" \
    --train.steps=$kSteps --checkpoint.every=$kSteps --train.threads=1 --run.dir="$work/$name" \
    "$@" >"$work/$name.txt" 2>&1 || rc=$?
  ((rc == 0)) || { cat "$work/$name.txt"; fail "$name: exit $rc"; }
}
same_parameters() {  # NAME NAME [TOLERANCE]
  /usr/bin/python3 "$check_run" compare "$work/$1/$final" "$work/$2/$final" "${3:-0}" ||
    fail "$1 and $2 trained different parameters"
}
readonly kSummed="summed in the node's shared memory"
readonly kOneCopy="one copy of the parameters in the node's shared memory"

train shared
grep -E "^ +buckets +:" "$work/shared.txt" || fail "no buckets line in the banner"
grep -q "$kSummed" "$work/shared.txt" || fail "the banner does not say the buckets are shared"
train mpi --ddp.shared_memory=false
if grep -q "$kSummed" "$work/mpi.txt"; then fail "ddp.shared_memory = false still sums in shared memory"; fi
same_parameters shared mpi
train zero --ddp.zero=1
grep -E "^ +optimizer +:" "$work/zero.txt" || fail "ZeRO-1: no optimizer line in the banner"
grep -q "$kSummed" "$work/zero.txt" || fail "ZeRO-1: the banner does not say the buckets are shared"
grep -q "$kOneCopy" "$work/zero.txt" || fail "ZeRO-1: the banner does not say the parameters are"
same_parameters shared zero 1e-6
train zero_ema --ddp.zero=1 --train.ema_decay=0.9
if grep -q "$kOneCopy" "$work/zero_ema.txt"; then fail "ZeRO-1 with a moving average shares parameters"; fi

echo "PASS: shared by default, equal to MPI_Allreduce, and ZeRO-1's parameters shared"
