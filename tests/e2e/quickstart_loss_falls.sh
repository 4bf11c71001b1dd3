#!/usr/bin/env bash
# The quick-start deck on 2 ranks: the loss must fall clearly, and the run directory must hold
# the resolved deck, the log and a metrics.h5 that h5dump and h5py read back as printed.
# Usage: quickstart_loss_falls.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail  # pipefail: the run's exit code, not tee's
source "$(dirname "$0")/common.sh"
"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" --run.dir="$work/run" | tee "$work/out.txt"
first=$(grep -m1 -oP '^step\s+\d+/\d+.*?loss \K[0-9.]+' "$work/out.txt")
last=$(grep -oP '^step\s+\d+/\d+.*?loss \K[0-9.]+' "$work/out.txt" | tail -1)
echo "first logged loss $first, last $last"
# "Clearly": the last logged loss is under 60% of the first.
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.6 * a) }' || { echo "FAIL: loss did not fall clearly"; exit 1; }
test -s "$work/run/config.cfg" || { echo "FAIL: no config.cfg"; exit 1; }
test -s "$work/run/log.txt" || { echo "FAIL: no log.txt"; exit 1; }
grep -q '^\[train\]' "$work/run/config.cfg" || { echo "FAIL: config.cfg is not a deck"; exit 1; }
h5dump -H "$work/run/metrics.h5" >/dev/null || { echo "FAIL: h5dump cannot read metrics.h5"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/check_metrics.py" "$work/run/metrics.h5" "$work/out.txt" 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
/usr/bin/python3 "$repo/share/ddptrain/plot_metrics.py" "$work/run" -o "$work/curves.png"
test -s "$work/curves.png" || { echo "FAIL: plot_metrics.py wrote no PNG"; exit 1; }
echo "quickstart ok"
