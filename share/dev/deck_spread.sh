#!/usr/bin/env bash
# How far the decks' losses move with the CPU kernels: runs every CPU-sized deck exactly as the
# decks tests do (tests/CMakeLists.txt: the same --train.steps, torchscript's preparation first),
# at 1 and 2 ranks, under every setting of share/dev/kernel_settings.sh, and prints per deck
# and rank count the largest relative difference |run - reference| / |reference| of any logged
# row from inputs/reference/DECK.npRANKS.csv, and the setting and row where it was. Then the same
# per row, to see whether late rows drift more than early ones.
# Last, the rtol this suggests per deck for the `# tolerance` lines of inputs/reference/*.csv:
# SAFETY (4) times the largest over both rank counts, at least FLOOR (1e-5), rounded up to two
# digits; the tolerance lines say why. Tiers by step (tighter early rows, see reference_log.py)
# are chosen by hand from the per-row table.
#   share/dev/deck_spread.sh [DDPTRAIN]        (default build/bin/ddptrain)
#   share/dev/deck_spread.sh --summary TSV...  the tables again, from kept SPREAD_TSV files
# KERNEL_SETTINGS (newline-separated lines as kernel_settings.sh prints) replaces the settings;
# DECKS (space-separated names) limits the decks; SPREAD_TSV=FILE keeps every row's difference
# (setting, deck, ranks, series, step, run, reference, relative difference) in FILE.
# Takes minutes (25 settings x 10 runs: about 8 minutes on 2 idle cores): copy the binary first
# if another build may replace it meanwhile.
set -euo pipefail
SAFETY=${SAFETY:-4}
FLOOR=${FLOOR:-1e-5}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=/usr/bin/python3   # Debian's, with torch and h5py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tsv=${SPREAD_TSV:-$work/spread.tsv}

# run_all DDPTRAIN: every deck at 1 and 2 ranks under every setting; each row's difference from
# the reference goes into $tsv.
run_all() {
  local ddptrain deck_steps ts_steps pair setting label deck ranks start t0
  ddptrain=$(realpath "$1")
  # The decks and their steps, read from the decks block of tests/CMakeLists.txt so as to stay
  # what the tests run.
  local cmake_tests=$repo/tests/CMakeLists.txt
  deck_steps=$(sed -n 's/^foreach(deck_steps \(.*\))$/\1/p' "$cmake_tests")
  # shellcheck disable=SC2016  # ${ranks} is CMake's, matched literally
  ts_steps=$(sed -n 's|.*/inputs/torchscript\.cfg \${ranks} \([0-9][0-9]*\)$|\1|p' "$cmake_tests")
  [[ -n $deck_steps && -n $ts_steps ]] ||
    { echo "FAIL: no decks block found in $cmake_tests: update $0" >&2; exit 1; }
  local -A steps_of=([torchscript]=$ts_steps)
  local all_decks=() decks=() settings=() extra=()
  for pair in $deck_steps; do
    steps_of[${pair%:*}]=${pair#*:}
    all_decks+=("${pair%:*}")
  done
  all_decks+=(torchscript)
  read -r -a decks <<<"${DECKS:-${all_decks[*]}}"

  if [[ -n ${KERNEL_SETTINGS:-} ]]; then
    mapfile -t settings <<<"$KERNEL_SETTINGS"
  else
    mapfile -t settings < <(bash "$repo/share/dev/kernel_settings.sh")
  fi

  : >"$tsv"
  echo "ddptrain: $ddptrain ($(md5sum <"$ddptrain" | cut -c1-12)); ${#settings[@]} kernel settings"
  start=$SECONDS
  for setting in "${settings[@]}"; do
    label=${setting:-native}
    t0=$SECONDS
    for deck in "${decks[@]}"; do
      extra=()
      if [[ $deck == torchscript ]]; then
        # The prepare_torchscript_deck test, under the same setting (the export initialises the
        # weights with LibTorch's kernels too).
        # shellcheck disable=SC2086  # SETTING is a list of VAR=value words
        env $setting "$ddptrain" make-data tokens --output "$work/tokens.h5" --tokens 300000 \
          --vocab 256 --seed 5 --force >/dev/null
        # shellcheck disable=SC2086
        env $setting "$python" "$repo/share/ddptrain/models/gpt.py" --output "$work/gpt.pt" \
          --vocab 256 --block 64 --n-layer 2 --n-head 4 --n-embd 64 --seed 5 >/dev/null
        extra=(--data.path="$work/tokens.h5" --model.path="$work/gpt.pt")
      fi
      for ranks in 1 2; do
        rm -rf "$work/run"
        # As tests/e2e/deck_matches_reference.sh runs it.
        # shellcheck disable=SC2086
        env $setting mpirun -np "$ranks" --oversubscribe --bind-to none "$ddptrain" train \
          "$repo/inputs/$deck.cfg" --run.dir="$work/run" --train.steps="${steps_of[$deck]}" \
          --log.progress=lines "${extra[@]}" >"$work/out.txt" 2>&1 ||
          { cat "$work/out.txt"; echo "FAIL: $deck at $ranks rank(s) under $label" >&2; exit 1; }
        "$python" "$repo/share/ddptrain/reference_log.py" diff "$work/run" \
          "$repo/inputs/reference/$deck.np$ranks.csv" |
          sed "s|^|$label\t$deck\t$ranks\t|" >>"$tsv"
      done
    done
    echo "  $label: $((SECONDS - t0)) s"
  done
  echo "all runs: $((SECONDS - start)) s"
}

if [[ ${1:-} == --summary ]]; then
  shift
  [[ $# -gt 0 ]] || { echo "usage: $0 --summary TSV..." >&2; exit 2; }
  cat "$@" >"$work/spread.tsv"
  tsv=$work/spread.tsv
else
  run_all "${1:-$repo/build/bin/ddptrain}"
fi

# Columns of $tsv: setting deck ranks series step run reference relative.
echo
echo "largest relative difference from the reference, over all settings and logged rows:"
sort -t$'\t' -k2,2 -k3,3n -k8,8gr "$tsv" | awk -F'\t' '
  !(($2, $3) in seen) { seen[$2, $3] = 1
    printf "  %-15s np%s  %-9.3g at %s %s under %s\n", $2, $3, $8, $4, $5, $1 }'
echo
echo "per row (largest over settings; in how many settings it moved beyond the 9 digits written):"
sort -t$'\t' -k2,2 -k3,3n -k4,4 -k5,5n -k8,8gr "$tsv" | awk -F'\t' '
  { key = $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
    if (!(key in worst)) { worst[key] = $8; where[key] = $1; order[++n] = key }
    total[key]++; if ($8 > 1e-8) moved[key]++ }
  END { for (i = 1; i <= n; i++) { split(order[i], k, SUBSEP)
    key = order[i]
    printf "  %-15s np%s  %-5s %5s  %-9.3g (%d of %d settings; largest under %s)\n",
      k[1], k[2], k[3], k[4], worst[key], moved[key], total[key], where[key] } }'
echo
echo "suggested rtol per deck ($SAFETY x the largest over both rank counts, at least $FLOOR):"
sort -t$'\t' -k2,2 -k8,8gr "$tsv" | awk -F'\t' -v safety="$SAFETY" -v floor="$FLOOR" '
  !($2 in seen) { seen[$2] = 1; x = safety * $8; if (x < floor) x = floor
    e = 10 ^ (int(log(x) / log(10) + 100) - 100 - 1)   # two digits: round up to a multiple of e
    r = int(x / e + 1e-9); if (r * e < x * (1 - 1e-9)) r++
    printf "  %-15s rtol=%.2g  (largest %.3g: np%s %s %s under %s)\n", $2, r * e, $8, $3, $4, $5,
      $1 }'
