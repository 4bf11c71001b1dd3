#!/usr/bin/env bash
# The watchdog's CUDA-event path on a GPU (one rank, NCCL): an all-reduce queued behind a 20 s
# kernel passes its 2 s deadline, and the process ends with exit code 5 within 15 s, with the
# timeout report naming the NCCL all-reduce. "[  SKIPPED ]" without a GPU (ctest counts it as
# skipped). Usage: watchdog_cuda_event.sh MPIEXEC PROBE (PROBE: support/watchdog_cuda_probe.cpp)
set -uo pipefail
mpiexec=$1
probe=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() {
  echo "FAIL: $*"
  cat "$out"
  exit 1
}
start=$SECONDS
timeout 120 "$mpiexec" -np 1 "$probe" </dev/null >"$out" 2>&1
rc=$?
took=$((SECONDS - start))
if grep -q '^\[  SKIPPED \]' "$out"; then
  cat "$out"
  exit 0
fi
echo "exit code $rc after $took s"
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5"
((took <= 15)) || fail "took $took s: the watchdog did not end the process at its deadline"
grep -q "collective timed out: 'NCCL all_reduce #1 (1024 x Float)' at step 0 did not complete within dist.timeout_s = 2 s" "$out" ||
  fail "the report does not name the NCCL all-reduce"
grep "collective timed out" "$out"
echo "watchdog CUDA-event path: all checks passed"
