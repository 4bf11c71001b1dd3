#!/usr/bin/env bash
# skip_without_gpu.sh COMMAND...: runs a GPU test (a GoogleTest case, or a script that prints
# "[  SKIPPED ]" where it finds no CUDA device) and gives ctest its outcome, with
# SKIP_RETURN_CODE 77 and no output pattern (a pattern would override the exit code):
#  - COMMAND failed: failed, with its exit code (77 without a "[  SKIPPED ]" line turned into 1);
#  - COMMAND passed without skipping: passed;
#  - COMMAND skipped (printed "[  SKIPPED ]", with exit code 0, or 77 as the MPI tests' main
#    gives it) where `nvidia-smi -L` lists no GPU, or there is no nvidia-smi: skipped (exit 77);
#  - COMMAND skipped where nvidia-smi lists a GPU: failed; the test must run there.
set -euo pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$@" >"$out" 2>&1 || rc=$?
cat "$out"
# At a line's start, or after the colour GoogleTest gives it on a terminal (mpirun's ranks have one).
esc=$'\e'
skipped=0
grep -q -e '^\[  SKIPPED \]' -e "^$esc\[[0-9;]*m\[  SKIPPED \]" "$out" && skipped=1
if ((rc != 0 && !(rc == 77 && skipped))); then
  echo "FAIL: exit code $rc"
  exit $((rc == 77 ? 1 : rc))
fi
((skipped)) || exit 0
gpus=$(nvidia-smi -L 2>/dev/null || true)
if grep -q '^GPU ' <<<"$gpus"; then
  echo "FAIL: skipped, but nvidia-smi lists a GPU:"
  echo "$gpus"
  exit 1
fi
echo "skipped: nvidia-smi lists no GPU"
exit 77
