#!/usr/bin/env bash
# A deck of inputs/ runs to completion, shortened to STEPS, at RANKS ranks, and its losses match
# inputs/reference/DECK.npRANKS.csv within that file's own tolerance line (measured over the CPU
# kernel settings of share/dev/kernel_settings.sh; see share/ddptrain/reference_log.py).
#   deck_matches_reference.sh MPIEXEC DDPTRAIN DECK RANKS STEPS [extra ddptrain options...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ranks=$4
steps=$5
shift 5
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
name=$(basename "$deck" .cfg)
"$mpiexec" -np "$ranks" --oversubscribe --bind-to none "$ddptrain" train "$deck" \
  --run.dir="$work/run" --train.steps="$steps" --log.progress=lines "$@" > "$work/out.txt" 2>&1 ||
  { cat "$work/out.txt"; fail "$name at $ranks rank(s) exited with $?"; }
grep -q "^step " "$work/out.txt" || { cat "$work/out.txt"; fail "no progress lines"; }
/usr/bin/python3 "$repo/share/ddptrain/reference_log.py" compare "$work/run" \
  "$repo/inputs/reference/$name.np$ranks.csv" || { cat "$work/out.txt"; fail "$name differs"; }
echo "PASS: $name at $ranks rank(s), $steps steps, matches its reference"
