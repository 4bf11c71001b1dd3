#!/usr/bin/env bash
# The evaluation logged during training is the evaluation of the checkpoint written at that step:
# the CNN deck (batch-norm statistics, which each rank's steps change on its own data) at 2 ranks,
# evaluated at step 40 and checkpointed there; `ddptrain eval` of that checkpoint, at 2 ranks and
# at 1, prints the loss and accuracy the run logged, within 1e-5 (both are printed at 5 decimals,
# and 1 rank sums in another order; evaluation with each rank's own statistics differed from it
# in the third). checkpoint.keep_best picks by these numbers, so they must be the file's.
# Usage: eval_matches_checkpoint.sh MPIEXEC DDPTRAIN DECK (DECK: inputs/cnn_images.cfg)
set -uo pipefail
source "$(dirname "$0")/common.sh"
mpi() {  # RANKS ARGS...
  local n=$1
  shift
  "$mpiexec" -np "$n" --oversubscribe --bind-to none "$ddptrain" "$@"
}
mpi 2 train "$deck" --run.dir="$work/run" --train.steps=40 --eval.every=40 \
  --checkpoint.every=40 --log.every=20 --log.progress=lines >"$work/train.txt" 2>&1 ||
  fail "training: $(tail -5 "$work/train.txt")"
logged=$(grep -aoP '^eval at step 40: \Kloss .*?(?= +\()' "$work/train.txt") ||
  fail "no evaluation logged at step 40: $(tail -5 "$work/train.txt")"
echo "logged at step 40:  $logged"
for n in 2 1; do
  out=$(mpi $n eval "$work/run/config.cfg" --checkpoint "$work/run/checkpoints/step_00000040.h5" 2>&1) ||
    fail "eval on $n rank(s): $out"
  evaluated=$(printf '%s\n' "$out" | grep -aoP '^eval: \Kloss .*?(?= +\()') ||
    fail "eval on $n rank(s) printed no result: $out"
  echo "eval on $n rank(s): $evaluated"
  # "loss L  accuracy A": each number within 1e-5, checked as numbers (a NaN fails).
  /usr/bin/python3 - "$logged" "$evaluated" <<'PY' ||
import math
import sys
logged, evaluated = (s.split() for s in sys.argv[1:3])
ok = len(logged) == len(evaluated) and all(
    a == b if not a[0].isdigit() else abs(float(a) - float(b)) <= 1e-5 and math.isfinite(float(a))
    for a, b in zip(logged, evaluated))
sys.exit(0 if ok else 1)
PY
    fail "eval of the checkpoint on $n rank(s) says '$evaluated', the run logged '$logged'"
done
echo "the logged evaluation is the checkpoint's"
