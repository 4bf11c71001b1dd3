#!/usr/bin/env bash
# Rewrites inputs/reference/DECK.np1.csv and .np2.csv: the losses of each CPU-sized deck run in
# full at 1 and 2 ranks (no timings). Run it after a change that is meant to change the numbers,
# and say why in the commit. The tests (tests/e2e/deck_matches_reference.sh) compare shortened
# runs against these files, within the tolerance on each file's second line (`# tolerance ...`,
# see share/ddptrain/reference_log.py). That line is measured, not computed from one run: it is
# kept from the file being replaced. After a change that may change how far the numbers move
# with the CPU kernels (a new deck, other steps, another optimiser), run
# share/dev/deck_spread.sh and edit the line by its rule (safety factor x largest spread);
# a new deck gets a placeholder line that says it was not measured.
#   share/dev/make_reference_logs.sh [DECK ...]    (default: every CPU-sized deck)
# Uses build/bin/ddptrain (DDPTRAIN to override) and mpirun.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
decks=("$@")
[[ ${#decks[@]} -gt 0 ]] || decks=(quickstart mlp_regression cnn_images gpt_tokens torchscript)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for deck in "${decks[@]}"; do
  cfg=$repo/inputs/$deck.cfg
  extra=()
  if [[ $deck == torchscript ]]; then
    # The deck's two preparation steps, into the scratch directory.
    "$ddptrain" make-data tokens --output "$work/tokens.h5" --tokens 300000 --vocab 256 --seed 5
    /usr/bin/python3 "$repo/share/ddptrain/models/gpt.py" --output "$work/gpt.pt" --vocab 256 \
      --block 64 --n-layer 2 --n-head 4 --n-embd 64 --seed 5
    extra=(--data.path="$work/tokens.h5" --model.path="$work/gpt.pt")
  fi
  for ranks in 1 2; do
    echo "== $deck at $ranks rank(s)"
    mpirun -np "$ranks" --oversubscribe --bind-to none "$ddptrain" train "$cfg" \
      --run.dir="$work/$deck.np$ranks" --log.progress=lines "${extra[@]}" | tail -n 3
    file=$repo/inputs/reference/$deck.np$ranks.csv
    tolerance=$(grep -m 1 '^# tolerance ' "$file" 2>/dev/null) || {
      tolerance="# tolerance rtol=0.001 atol=1e-05: not measured (a placeholder): set it from"
      tolerance+=" share/dev/deck_spread.sh"
      echo "WARNING: $file had no tolerance line: wrote a placeholder, measure it"
    }
    /usr/bin/python3 "$repo/share/ddptrain/reference_log.py" write "$work/$deck.np$ranks" "$deck" \
      "$ranks" --tolerance "$tolerance" > "$work/reference.csv"
    mv "$work/reference.csv" "$file"
  done
done
echo "written: inputs/reference/"
