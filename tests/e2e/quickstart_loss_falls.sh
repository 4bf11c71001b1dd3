#!/usr/bin/env bash
# The quick-start deck on 2 ranks: the loss must fall clearly, and the run directory must hold
# the resolved deck and the log. Usage: quickstart_loss_falls.sh MPIEXEC DDPTRAIN DECK
set -eu
mpiexec=$1
ddptrain=$2
deck=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" --run.dir="$work/run" | tee "$work/out.txt"
first=$(grep -m1 -oP '^step\s+\d+/\d+.*?loss \K[0-9.]+' "$work/out.txt")
last=$(grep -oP '^step\s+\d+/\d+.*?loss \K[0-9.]+' "$work/out.txt" | tail -1)
echo "first logged loss $first, last $last"
# "Clearly": the last logged loss is under 60% of the first.
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.6 * a) }' || { echo "FAIL: loss did not fall clearly"; exit 1; }
test -s "$work/run/config.cfg" || { echo "FAIL: no config.cfg"; exit 1; }
test -s "$work/run/log.txt" || { echo "FAIL: no log.txt"; exit 1; }
grep -q '^\[train\]' "$work/run/config.cfg" || { echo "FAIL: config.cfg is not a deck"; exit 1; }
echo "quickstart ok"
