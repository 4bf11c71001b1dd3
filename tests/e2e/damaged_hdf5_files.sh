#!/usr/bin/env bash
# The damaged files that crash libhdf5 itself (tests/fuzz/hdf5_crashes, found by the fuzz
# targets), given to ddptrain as a user would: `inspect FILE`, `train` with FILE as its data, and
# `train --train.resume=FILE`. Each must end with one error line and exit 3 (or 2), not a
# segmentation fault or an ever-growing process: ddptrain-h5probe walks every file in a process of
# its own first (src/h5/h5_probe.hpp). Without it, on Debian 12 (HDF5 1.10) one input ended in a
# segmentation fault and two grew until the OOM killer ended them; a limit on address space here
# turns the latter into a crash rather than a machine without memory.
# Usage: damaged_hdf5_files.sh MPIEXEC DDPTRAIN DECK
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# inspect_endless_loop_in_H5HG_read.h5 keeps HDF5 busy forever: the probe's deadline, 3 s here
# instead of 60, ends it.
export DDPTRAIN_H5PROBE_SECONDS=3
crashes=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz/hdf5_crashes" && pwd)

# run_limited LOG CMD...: CMD with at most 16 GiB of address space and 120 s; its exit status.
run_limited() {
  local log=$1
  shift
  (ulimit -v $((16 << 20)) && exec timeout 120 "$@") </dev/null >"$log" 2>&1
}

checked=0
for file in "$crashes"/*.h5; do
  name=$(basename "$file" .h5)
  commands=(
    "inspect|$ddptrain inspect $file"
    "data|$ddptrain train $deck --data.type=hdf5 --data.path=$file --train.steps=2 --run.dir=$work/$name.data"
    "resume|$ddptrain train $deck --train.resume=$file --train.steps=2 --run.dir=$work/$name.resume"
  )
  for entry in "${commands[@]}"; do
    how=${entry%%|*}
    read -r -a command <<<"${entry#*|}"
    log=$work/$name.$how.log
    run_limited "$log" "${command[@]}"
    rc=$?
    errors=$(grep -c 'ddptrain: error:' "$log")
    message=$(grep 'ddptrain: error:' "$log" | head -n 1)
    echo "$name, $how: exit $rc, ${message:0:240}"
    if [[ $rc -ne 2 && $rc -ne 3 ]] || [[ $errors -ne 1 ]]; then
      tail -n 20 "$log"
      fail "$name through '$how': exit $rc with $errors error line(s); expected exit 2 or 3 and one line"
    fi
    expect_message "$name.h5"  # the file was opened, not refused for something else
    checked=$((checked + 1))
  done
done
[[ $checked -ge 27 ]] || fail "only $checked runs: the inputs of tests/fuzz/hdf5_crashes are missing"
# A deadline that is not whole seconds is a usage error (exit 2), naming the variable.
DDPTRAIN_H5PROBE_SECONDS=3s "$ddptrain" inspect "$crashes/inspect_segv_in_H5Aexists.h5" \
  </dev/null >"$work/bad_seconds.log" 2>&1
rc=$?
message=$(grep 'ddptrain: error:' "$work/bad_seconds.log" | head -n 1)
[[ $rc -eq 2 ]] || fail "DDPTRAIN_H5PROBE_SECONDS=3s: exit $rc, expected 2: $message"
expect_message "DDPTRAIN_H5PROBE_SECONDS = '3s'"
echo "PASS: $checked runs on damaged files, each one error line and exit 2 or 3; a bad deadline is exit 2"
