#!/usr/bin/env bash
# CI leg: no result may depend on the CPU model. Against the build of check.sh, runs tests under
# kernel settings (share/dev/kernel_settings.sh: environment variables that make OpenBLAS,
# LibTorch, oneDNN and libm pick the kernels another x86-64 CPU would pick):
#  decks:  the decks (golden logs: the comparison most sensitive to kernels) under every whole-CPU
#          setting (SSE4.2, AVX, AVX2 Intel and AMD, AVX-512: every axis at once, as real CPUs
#          combine them; at 1 rank, and at 2 ranks under one of them ROTATING by commit) and one
#          thread per rank (reductions split as on a cluster that gives each rank one core), plus
#          one of the settings that no whole-CPU line contains (OpenBLAS's Prescott, Core2 and
#          Cooperlake kernels, 3 and 4 threads), ROTATING by commit;
#  suites: the unit and mpi tests under one whole-CPU setting, ROTATING by commit.
# Why no more: all 25 settings for the decks and the 5 whole-CPU ones for the suites took about
# 1,800 s, a third of the CI's time. The defects this leg has found were deck tolerances that
# another CPU's kernels exceeded (the CNN deck: oneDNN's convolutions, thread counts), which the
# fixed deck settings cover on every commit. A one-variable setting that a whole-CPU line
# contains (e.g. ONEDNN_MAX_CPU_ISA=AVX2) adds no kernel that line lacks: it only says which axis
# moved once that line fails, so it runs with ALL=1 (run it by hand then), not per commit. The
# rotation index is the commit count (`git rev-list --count HEAD`): consecutive commits take
# consecutive settings, and DDPTRAIN_KERNEL_ROTATION=N repeats the choice of the log's index N.
# `ALL=1` runs every setting for the decks and every whole-CPU setting for the suites (about 30
# minutes).
# e2e and slurm tests compare runs with each other on one machine, so they are left to check.sh.
# Each run goes through check.sh --no-setup, so under CI=true an unexpected skip fails here too.
# Usage: share/dev/ci/kernel_settings.sh [decks|suites]   (default both; after check.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
settings=$repo/share/dev/kernel_settings.sh
check=$repo/share/dev/check.sh
phase=${1:-both}
case $phase in decks | suites | both) ;; *) echo "usage: $0 [decks|suites]" >&2; exit 2 ;; esac

# Per commit, how many of the rotating settings the decks run under.
readonly kRotatingDeckSettings=1

rotation=${DDPTRAIN_KERNEL_ROTATION:-$(git -C "$repo" rev-list --count HEAD 2>/dev/null || echo 0)}
mapfile -t lines < <(bash "$settings")
whole_cpu=() fixed=() one_axis=()
for setting in "${lines[@]}"; do
  if [[ -z $setting ]]; then
    continue # native: check.sh ran it
  elif [[ $setting == *" "* ]]; then
    whole_cpu+=("$setting")
  elif [[ $setting == OMP_NUM_THREADS=1 ]]; then
    fixed+=("$setting")
  else
    one_axis+=("$setting")
  fi
done
# The one-variable settings that no whole-CPU line contains rotate; the others only say which
# axis of a failing whole-CPU line moved.
rotating=() diagnostic=()
for setting in "${one_axis[@]}"; do
  if printf ' %s \n' "${whole_cpu[@]}" | grep -qF " $setting "; then
    diagnostic+=("$setting")
  else
    rotating+=("$setting")
  fi
done
echo "== kernel settings: ${#whole_cpu[@]} whole-CPU, ${#fixed[@]} more fixed," \
  "${#rotating[@]} rotating, ${#diagnostic[@]} only with ALL=1; rotation index $rotation" \
  "(DDPTRAIN_KERNEL_ROTATION)"

# pick START COUNT ITEMS...: COUNT items from START on, wrapping around.
pick() {
  local start=$1 count=$2 i
  shift 2
  (($# > 0)) || return 0
  ((count < $# )) || count=$#
  for ((i = 0; i < count; i++)); do echo "${@:$(((start + i) % $# + 1)):1}"; done
}

failed=()
# under SETTING CHECK-ARGS...: check.sh's tests under one setting; a failure is remembered.
under() {
  local setting=$1
  shift
  echo "== kernel setting: $setting: $*"
  # </dev/null: mpirun reads standard input, which would swallow the rest of the list.
  # shellcheck disable=SC2086  # a list of VAR=value words
  env $setting bash "$check" --no-setup "$@" </dev/null || failed+=("$setting ($*)")
}

if [[ $phase == decks || $phase == both ]]; then
  if [[ ${ALL:-} == 1 ]]; then
    deck_settings=("${whole_cpu[@]}" "${fixed[@]}" "${rotating[@]}" "${diagnostic[@]}")
  else
    mapfile -t turn < <(pick $((rotation * kRotatingDeckSettings)) "$kRotatingDeckSettings" \
      "${rotating[@]}")
    deck_settings=("${whole_cpu[@]}" "${fixed[@]}" "${turn[@]}")
  fi
  # At 2 ranks each rank's products have other shapes (half the rows) and the gradients are
  # averaged: every whole-CPU line runs the decks at 1 rank, and at 2 ranks under one of them, by
  # rotation (the fixed and rotating settings at both).
  two_ranks_under=$(pick "$rotation" 1 "${whole_cpu[@]}")
  for setting in "${deck_settings[@]}"; do
    if [[ ${ALL:-} != 1 && $setting == *" "* && $setting != "$two_ranks_under" ]]; then
      under "$setting" -L '^decks$' -E '_np2$'
    else
      under "$setting" -L '^decks$'
    fi
  done
fi

if [[ $phase == suites || $phase == both ]]; then
  if [[ ${ALL:-} == 1 ]]; then
    suite_settings=("${whole_cpu[@]}")
  else
    mapfile -t suite_settings < <(pick "$rotation" 1 "${whole_cpu[@]}")
  fi
  for setting in "${suite_settings[@]}"; do
    # Without oneDNN's cap here: LibTorch 1.13 sends bf16 matrix products to oneDNN when CPUID
    # shows AVX-512 (mkldnn_bf16_device_check), whatever ONEDNN_MAX_CPU_ISA says, and a capped
    # oneDNN then refuses them ("could not create a primitive descriptor iterator"); a CPU that
    # really lacks AVX-512 takes ATen's own bf16 kernels instead. The decks run under the cap.
    # shellcheck disable=SC2086  # a list of VAR=value words
    uncapped=$(printf '%s\n' $setting | grep -v '^ONEDNN_MAX_CPU_ISA=' | paste -sd' ')
    under "$uncapped" -L 'unit|mpi' -LE gpu
  done
fi

if ((${#failed[@]})); then
  echo "FAIL: tests failed under:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "PASS: every kernel setting of this run (rotation index $rotation)"
