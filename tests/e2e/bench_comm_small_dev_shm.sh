#!/usr/bin/env bash
# `ddptrain bench comm` with a /dev/shm of 512 KiB (a tmpfs in a mount namespace of the job's own:
# root only, label root; exit 77 otherwise): 1 to 64 KiB fit (a page of flags and 2 ranks'
# copies), 256 KiB and 1 MiB do not; those rows of the node-shared-memory table went through MPI
# and are marked so (*), with one warning naming the call and the cause. (bench_comm.sh checks
# that no row is marked with /dev/shm free.)
# Usage: bench_comm_small_dev_shm.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_root "mounting a small /dev/shm"

small_dev_shm "$mpiexec" -np 2 --oversubscribe "$ddptrain" bench comm --ops all_reduce \
  --min-bytes 1KiB --max-bytes 1MiB --step-factor 4 --iters 1 --warmup 0 \
  </dev/null >"$work/out_full" 2>&1 ||
  { rc=$?; cat "$work/out_full"; fail "bench comm with a small /dev/shm: exit $rc"; }
echo "--- /dev/shm of 512 KiB:"
sed -n '/through node-shared memory/,$p' "$work/out_full"
marked=$(sed -n '/through node-shared memory/,$p' "$work/out_full" |
  awk '$1 == "all_reduce" { printf "%s%s%s ", $2, $3, ($NF == "*" ? "*" : "") }')
[[ $marked == "1KiB 4KiB 16KiB 64KiB 256KiB* 1MiB* " ]] ||
  fail "shared-memory rows marked '$marked', not the two that /dev/shm refused"
grep -q "^  \* through MPI, not node-shared memory: /dev/shm refused the buffer" "$work/out_full" ||
  fail "no line saying what * means"
grep -q "posix_fallocate(/ddptrain-.*No space left on device" "$work/out_full" ||
  fail "no warning naming the call /dev/shm refused and why"
echo "bench comm with a small /dev/shm: all checks passed"
