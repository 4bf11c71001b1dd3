#!/usr/bin/env bash
# Gradient buckets summed in node-shared memory (ddp.shared_memory, src/comm/node_all_reduce.cpp),
# as users run it, at 2 ranks on one node:
#  - on by default: the banner says so, and the run trains the same parameters, bit for bit, as
#    with ddp.shared_memory = false (MPI_Allreduce; at 2 ranks a + b is b + a);
#  - ZeRO-1 (ddp.zero = 1): the buckets reduce-scattered there and one shared copy of the
#    parameters, as the banner says; it trains the parameters of the plain run to rounding (the
#    optimizer's arithmetic on 1-D pieces may round differently), and not with a moving average;
#  - a /dev/shm too small for the buckets (a 512 KiB tmpfs mounted in a mount namespace of the job's
#    own, root only) gives one warning naming the failed call and the cause, and the run trains
#    the same parameters through MPI_Allreduce.
# Usage: shared_memory_buckets.sh MPIEXEC DDPTRAIN DECK
set -uo pipefail
source "$(dirname "$0")/common.sh"
readonly kSteps=30
final=checkpoints/step_$(printf %08d $kSteps).h5
check_run=$(dirname "$(readlink -f "$0")")/../cluster/check_run.py

# train NAME [OPTION...]: 2 ranks, output in $work/NAME.txt, run.dir $work/NAME; launched
# through the command in ${wrapper[@]} when set.
wrapper=()
train() {
  local name=$1 rc
  shift
  "${wrapper[@]}" "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" \
    --train.steps=$kSteps --checkpoint.every=$kSteps --train.threads=1 --run.dir="$work/$name" \
    "$@" >"$work/$name.txt" 2>&1
  rc=$?
  ((rc == 0)) || { cat "$work/$name.txt"; fail "$name: exit $rc"; }
}
same_parameters() {  # NAME NAME [TOLERANCE]
  /usr/bin/python3 "$check_run" compare "$work/$1/$final" "$work/$2/$final" "${3:-0}" ||
    fail "$1 and $2 trained different parameters"
}
readonly kSummed="summed in the node's shared memory"
readonly kOneCopy="one copy of the parameters in the node's shared memory"

train shared
grep -E "^ +buckets +:" "$work/shared.txt"
grep -q "$kSummed" "$work/shared.txt" || fail "the banner does not say the buckets are shared"
train mpi --ddp.shared_memory=false
grep -q "$kSummed" "$work/mpi.txt" && fail "ddp.shared_memory = false still sums in shared memory"
same_parameters shared mpi
train zero --ddp.zero=1
grep -E "^ +optimizer +:" "$work/zero.txt"
grep -q "$kSummed" "$work/zero.txt" || fail "ZeRO-1: the banner does not say the buckets are shared"
grep -q "$kOneCopy" "$work/zero.txt" || fail "ZeRO-1: the banner does not say the parameters are"
same_parameters shared zero 1e-6
train zero_ema --ddp.zero=1 --train.ema_decay=0.9
grep -q "$kOneCopy" "$work/zero_ema.txt" && fail "ZeRO-1 with a moving average shares parameters"

[[ $(id -u) -eq 0 ]] || { echo "SKIP: mounting a small /dev/shm needs root"; exit 77; }
# Open MPI keeps its own shared-memory files in /dev/shm too: they go to $work here (its btl is
# "vader" in Open MPI 4, "sm" in 5).
export OMPI_MCA_btl_vader_backing_directory=$work OMPI_MCA_btl_sm_backing_directory=$work
wrapper=(unshare --mount --propagation private bash -c
  'mount -t tmpfs -o size=512k tmpfs /dev/shm && exec "$@"' small_dev_shm)
train full
echo "--- /dev/shm of 512 KiB:"
grep -E "buckets|shared memory" "$work/full.txt"
warnings=$(grep -c "gradient buckets not in shared memory" "$work/full.txt")
[[ $warnings -eq 1 ]] || fail "$warnings warnings about the buckets, not 1"
grep -q "posix_fallocate(/ddptrain-.*No space left on device" "$work/full.txt" ||
  fail "the warning does not name the failed call and its cause"
grep -q "$kSummed" "$work/full.txt" && fail "the banner says shared memory, which was refused"
same_parameters shared full
echo "PASS: shared by default, equal to MPI_Allreduce, ZeRO-1's parameters shared, and" \
  "MPI_Allreduce when /dev/shm is full"
