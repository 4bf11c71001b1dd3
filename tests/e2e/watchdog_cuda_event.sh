#!/usr/bin/env bash
# The watchdog's CUDA-event path on a GPU (one rank, NCCL): an all-reduce queued behind a 20 s
# kernel passes its 2 s deadline. The timeout report must name the NCCL all-reduce (a report at
# all shows it came before the kernel ended: the all-reduce would have completed then), and the
# process end with exit code 5. When the report came is printed, not asserted. (How soon it ends
# after the report is not checked: ncclCommAbort, before MPI_Abort, may wait for the kernel to
# finish; a collective that hangs on a peer is what it is made to cancel.) "[  SKIPPED ]" without
# a GPU (ctest counts it as skipped).
# Usage: watchdog_cuda_event.sh MPIEXEC PROBE (PROBE: support/watchdog_cuda_probe.cpp)
set -uo pipefail
source "$(dirname "$0")/probe_common.sh"
report="collective timed out: 'NCCL all_reduce #1 (1024 x Float)' at step 0 did not complete within dist.timeout_s = 2 s"
start=$SECONDS
timeout 120 "$mpiexec" -np 1 "$probe" </dev/null >"$out" 2>&1 &
job=$!
reported=
while kill -0 "$job" 2>/dev/null; do
  if [[ -z $reported ]] && grep -qF "$report" "$out"; then reported=$((SECONDS - start)); fi
  sleep 0.2
done
wait "$job"
rc=$?
took=$((SECONDS - start))
if grep -q '^\[  SKIPPED \]' "$out"; then
  cat "$out"
  exit 0
fi
[[ -n $reported ]] || grep -qF "$report" "$out" || fail "no report naming the NCCL all-reduce"
echo "report after ${reported:-?} s; exit code $rc after $took s"
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5"
grep -F "collective timed out" "$out"
echo "watchdog CUDA-event path: all checks passed"
