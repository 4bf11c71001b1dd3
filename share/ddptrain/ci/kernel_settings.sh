#!/usr/bin/env bash
# CI leg: no result may depend on the CPU model. Runs, against the build of check.sh,
#  - the decks (the golden logs, the most kernel-sensitive comparison) under every kernel setting
#    this CPU supports (share/ddptrain/kernel_settings.sh: OpenBLAS core types, LibTorch CPU
#    capabilities, oneDNN ISAs, libm variants, thread counts, and whole CPUs), and
#  - the unit and mpi tests under each whole-CPU setting (the lines that set several variables).
# e2e and slurm tests compare runs with each other on one machine, so they are left to check.sh.
# Usage: share/ddptrain/ci/kernel_settings.sh     (after share/ddptrain/check.sh has built)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${DDPTRAIN_BUILD_DIR:-$repo/build}
settings=$repo/share/ddptrain/kernel_settings.sh

bash "$settings" run ctest --test-dir "$build" -L decks --output-on-failure

failed=()
while IFS= read -r setting; do
  [[ $setting == *" "* ]] || continue  # one variable: covered by the decks above
  echo "== unit and mpi tests under: $setting"
  # shellcheck disable=SC2086  # SETTING is a list of VAR=value words
  env $setting ctest --test-dir "$build" -L "unit|mpi" -LE gpu --output-on-failure ||
    failed+=("$setting")
done < <(bash "$settings")
if ((${#failed[@]})); then
  echo "FAIL: unit and mpi tests under: ${failed[*]}"
  exit 1
fi
echo "PASS: decks under every kernel setting, unit and mpi tests under every whole-CPU setting"
