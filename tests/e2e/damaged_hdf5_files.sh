#!/usr/bin/env bash
# The damaged files that crash libhdf5 itself (tests/fuzz/hdf5_crashes, found by the fuzz
# targets), given to ddptrain as a user would: `inspect FILE`, `train` with FILE as its data, and
# `train --train.resume=FILE`. Each must end with one error line naming the file and exit 3 (a bad
# data or checkpoint file), not a segmentation fault or an ever-growing process, and not exit 2 (a
# bad command line or deck: the deck is fine): ddptrain-h5probe walks every file in a process of
# its own first (src/h5/h5_probe.hpp). Without it, on Debian 12 (HDF5 1.10) one input ended in a
# segmentation fault and two grew until the OOM killer ended them; a limit on address space here
# turns the latter into a crash rather than a machine without memory.
# Usage: damaged_hdf5_files.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
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

# Every run, two at a time (the test holds both cores: PROCESSORS 2); each one's exit code is
# written beside its log, and the runs are checked in order afterwards.
runs=()
for file in "$crashes"/*.h5; do
  name=$(basename "$file" .h5)
  runs+=(
    "$name|inspect|$ddptrain inspect $file"
    "$name|data|$ddptrain train $deck --data.type=hdf5 --data.path=$file --train.steps=2 --run.dir=$work/$name.data"
    "$name|resume|$ddptrain train $deck --train.resume=$file --train.steps=2 --run.dir=$work/$name.resume"
  )
done
for run in "${runs[@]}"; do
  IFS='|' read -r name how text <<<"$run"
  read -r -a command <<<"$text"
  log=$work/$name.$how.log
  { rc=0; run_limited "$log" "${command[@]}" || rc=$?; echo "$rc" >"$log.rc"; } &
  while (($(jobs -rp | wc -l) >= 2)); do wait -n || true; done
done
wait

checked=0
for run in "${runs[@]}"; do
  IFS='|' read -r name how _ <<<"$run"
  log=$work/$name.$how.log
  rc=$(cat "$log.rc")
  errors=$(grep -c 'ddptrain: error:' "$log" || true)
  message=$(grep -m1 'ddptrain: error:' "$log" || true)
  echo "$name, $how: exit $rc, ${message:0:240}"
  if [[ $rc -ne 3 || $errors -ne 1 ]]; then
    tail -n 20 "$log"
    fail "$name through '$how': exit $rc with $errors error line(s); expected exit 3 and one line"
  fi
  expect_message "$name.h5"  # the file was opened, not refused for something else
  checked=$((checked + 1))
done
[[ $checked -ge 27 ]] || fail "only $checked runs: the inputs of tests/fuzz/hdf5_crashes are missing"
# A deadline that is not whole seconds is a usage error (exit 2), naming the variable.
rc=0
DDPTRAIN_H5PROBE_SECONDS=3s "$ddptrain" inspect "$crashes/inspect_segv_in_H5Aexists.h5" \
  </dev/null >"$work/bad_seconds.log" 2>&1 || rc=$?
message=$(grep -m1 'ddptrain: error:' "$work/bad_seconds.log" || true)
[[ $rc -eq 2 ]] || fail "DDPTRAIN_H5PROBE_SECONDS=3s: exit $rc, expected 2: $message"
expect_message "DDPTRAIN_H5PROBE_SECONDS = '3s'"
echo "PASS: $checked runs on damaged files, each one error line and exit 3; a bad deadline is exit 2"
