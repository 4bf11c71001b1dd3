#!/usr/bin/env bash
# Gradient buckets with a /dev/shm too small for them (a 512 KiB tmpfs mounted in a mount
# namespace of the job's own: root only, label root; exit 77 otherwise), 2 ranks on one node: one
# warning naming the failed call and the cause, a banner that does not claim shared memory, and
# the same parameters, bit for bit, as the run with /dev/shm free (MPI_Allreduce instead; at 2
# ranks a + b is b + a). shared_memory_buckets.sh checks the rest of ddp.shared_memory.
# Usage: shared_memory_buckets_small_dev_shm.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_root "mounting a small /dev/shm"
readonly kSteps=30
final=checkpoints/step_$(printf %08d $kSteps).h5
check_run=$(dirname "$(readlink -f "$0")")/../cluster/check_run.py
readonly kSummed="summed in the node's shared memory"

# train NAME [WRAPPER...]: 2 ranks, launched through WRAPPER when given; output in
# $work/NAME.txt, run.dir $work/NAME.
train() {
  local name=$1 rc=0
  shift
  "$@" "$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" --train.steps=$kSteps \
    --checkpoint.every=$kSteps --train.threads=1 --run.dir="$work/$name" >"$work/$name.txt" 2>&1 ||
    rc=$?
  ((rc == 0)) || { cat "$work/$name.txt"; fail "$name: exit $rc"; }
}

train shared
grep -q "$kSummed" "$work/shared.txt" || fail "the banner does not say the buckets are shared"
train full small_dev_shm
echo "--- /dev/shm of 512 KiB:"
grep -E "buckets|shared memory" "$work/full.txt" || true
warnings=$(grep -c "gradient buckets not in shared memory" "$work/full.txt" || true)
[[ $warnings -eq 1 ]] || fail "$warnings warnings about the buckets, not 1"
grep -q "posix_fallocate(/ddptrain-.*No space left on device" "$work/full.txt" ||
  fail "the warning does not name the failed call and its cause"
if grep -q "$kSummed" "$work/full.txt"; then
  fail "the banner says shared memory, which was refused"
fi
/usr/bin/python3 "$check_run" compare "$work/shared/$final" "$work/full/$final" 0 ||
  fail "the run with a full /dev/shm trained different parameters"
echo "PASS: MPI_Allreduce, with one warning, when /dev/shm is full; the same parameters"
