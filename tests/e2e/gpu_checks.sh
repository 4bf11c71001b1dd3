# Sourced by the GPU scripts (gpu_training.sh, gpu_two_ranks.sh) after common.sh: the skip where
# this ddptrain has no CUDA device, runs of named checks that go on after a failure, and the
# comparison of two runs' checkpoints (with $DDPTRAIN_PYTHON, default /usr/bin/python3: h5py).
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}

# Read whole first: grep -q leaving the pipe early would end `info` by SIGPIPE (pipefail).
info=$("$ddptrain" info 2>/dev/null || true)
if ! grep -q "device (rank 0) : cuda" <<<"$info"; then
  echo "[  SKIPPED ] no CUDA device usable by this ddptrain"
  exit 0
fi

failures=()
# check NAME COMMAND...: runs one check, records its failure and goes on.
check() {
  local name=$1
  shift
  echo "--- $name"
  if "$@"; then echo "ok: $name"; else failures+=("$name"); echo "FAILED: $name"; fi
}
# report_checks WHAT: the failed checks and exit 1, or "WHAT passed".
report_checks() {
  if ((${#failures[@]})); then
    printf 'FAIL: %s\n' "${failures[@]}"
    exit 1
  fi
  echo "$1 passed"
}
# difference A B STEP: max over parameters of ||b - a|| / ||a|| at STEP's checkpoints of the runs
# in $work/A and $work/B; fails (with a line naming the parameter) where a parameter of either is
# not finite.
difference() {
  "$python" - "$work/$1/checkpoints/step_$(printf %08d "$3").h5" \
    "$work/$2/checkpoints/step_$(printf %08d "$3").h5" <<'PY'
import sys
from compare_arrays import datasets, worst_relative_difference
try:
    value, _ = worst_relative_difference(datasets(sys.argv[2]), datasets(sys.argv[1]))
except AssertionError as e:  # NotFinite, or files that do not match
    sys.exit(f"FAIL: {e}")
print(value)
PY
}
# within A B STEP LIMIT: the difference is at most LIMIT.
within() {
  local d
  d=$(difference "$1" "$2" "$3") || return 1
  echo "$1 vs $2 at step $3: max relative difference $d (limit $4)"
  "$python" -c "import sys; sys.exit(0 if $d <= $4 else 1)"
}
