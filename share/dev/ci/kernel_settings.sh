#!/usr/bin/env bash
# CI leg: no result may depend on the CPU model. Runs, against the build of check.sh,
#  decks:  the decks (the golden logs, the most kernel-sensitive comparison) under every kernel
#          setting this CPU supports (share/dev/kernel_settings.sh: OpenBLAS core types,
#          LibTorch CPU capabilities, oneDNN ISAs, libm variants, thread counts, whole CPUs);
#  suites: the unit and mpi tests under each whole-CPU setting (the lines with several variables).
# e2e and slurm tests compare runs with each other on one machine, so they are left to check.sh.
# Usage: share/dev/ci/kernel_settings.sh [decks|suites]   (default both; after check.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${DDPTRAIN_BUILD_DIR:-$repo/build}
settings=$repo/share/dev/kernel_settings.sh
phase=${1:-both}

if [[ $phase == decks || $phase == both ]]; then
  bash "$settings" run ctest --test-dir "$build" -L decks --output-on-failure
fi
[[ $phase == suites || $phase == both ]] || exit 0

failed=()
mapfile -t lines < <(bash "$settings")
for setting in "${lines[@]}"; do
  [[ $setting == *" "* ]] || continue  # one variable: covered by the decks above
  # Without oneDNN's cap here: LibTorch 1.13 sends bf16 matrix products to oneDNN when CPUID
  # shows AVX-512 (mkldnn_bf16_device_check), whatever ONEDNN_MAX_CPU_ISA says, and a capped
  # oneDNN then refuses them ("could not create a primitive descriptor iterator"); a CPU that
  # really lacks AVX-512 takes ATen's own bf16 kernels instead. The decks above run under the cap.
  uncapped=$(printf '%s\n' $setting | grep -v '^ONEDNN_MAX_CPU_ISA=' | tr '\n' ' ')
  echo "== unit and mpi tests under: $uncapped"
  # </dev/null: mpirun reads standard input, which would swallow the rest of the list.
  # shellcheck disable=SC2086  # a list of VAR=value words
  env $uncapped ctest --test-dir "$build" -L "unit|mpi" -LE gpu --output-on-failure </dev/null ||
    failed+=("$uncapped")
done
if ((${#failed[@]})); then
  echo "FAIL: unit and mpi tests under: ${failed[*]}"
  exit 1
fi
echo "PASS: unit and mpi tests under every whole-CPU setting"
