#!/usr/bin/env bash
# `ddptrain bench comm` as a user runs it: 2 ranks, a table with a row per op and size (8 B up to
# --max-bytes, doubling), busbw = algbw x the op's factor in every row, results checked; then,
# the ranks sharing one node, a second table of all_reduce and reduce_scatter through node-shared
# memory (how training sums its gradients there), left out with ddp.shared_memory = false, and no
# row marked as timed through MPI while /dev/shm has room; bad flags are one-line usage errors
# (exit 2). With a /dev/shm too small for the larger sizes: bench_comm_small_dev_shm.sh (root).
# Usage: bench_comm.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"

"$mpiexec" -np 2 --oversubscribe "$ddptrain" bench comm --max-bytes 1MiB --iters 2 --warmup 1 \
  </dev/null >"$work/out" 2>"$work/err" ||
  { rc=$?; cat "$work/out" "$work/err"; fail "bench comm exit $rc"; }
cat "$work/out"
grep -q "backend mpi, 2 ranks" "$work/out" || fail "no header naming the backend and ranks"
grep -Eq "^  op +size +elements +time \(us\) +algbw \(GB/s\) +busbw \(GB/s\)$" "$work/out" ||
  fail "no column header with busbw"
grep -q "all results checked on every rank" "$work/out" || fail "no line saying results were checked"
# Rows: op, size (number and unit), elements, time, algbw, busbw. 2 ranks: all_reduce busbw =
# algbw x 1, reduce_scatter and all_gather x 0.5 (to the printed 3 decimals). The size, elements,
# time, algbw and busbw must be plain numbers first: awk reads "nan" and "inf" as numbers, which
# every comparison below lets through.
awk -v OFS=' ' '
  /through node-shared memory/ { table = "shm " }
  $1 ~ /^(all_reduce|reduce_scatter|all_gather)$/ {
    rows[table $1]++
    for (f = 2; f <= 7; f++) {
      if (f == 3 || $f ~ /^[0-9]+(\.[0-9]+)?$/) continue  # $3: the unit of the size
      print "not a number in column " f ":", $0; bad = 1; next
    }
    factor = $1 == "all_reduce" ? 1 : 0.5
    if ($6 + 0 <= 0 && $7 + 0 <= 0) next  # below 0.0005 GB/s: nothing to compare
    if (($7 - $6 * factor) > 0.0011 || ($6 * factor - $7) > 0.0011) { print "busbw", $0; bad = 1 }
  }
  END {
    # 8 B .. 1 MiB doubling: 18 sizes; all_gather/reduce_scatter start at 8 B (one value per rank).
    if (rows["all_reduce"] != 18 || rows["reduce_scatter"] != 18 || rows["all_gather"] != 18) {
      print "rows:", rows["all_reduce"], rows["reduce_scatter"], rows["all_gather"]; bad = 1
    }
    # Node-shared memory: the sums only (all_gather has no such path).
    if (rows["shm all_reduce"] != 18 || rows["shm reduce_scatter"] != 18 || rows["shm all_gather"] != 0) {
      print "shared-memory rows:", rows["shm all_reduce"], rows["shm reduce_scatter"], rows["shm all_gather"]
      bad = 1
    }
    exit bad
  }' "$work/out" || fail "the table's rows are not as expected"
if grep -q "refused the buffer" "$work/out"; then fail "rows marked as through MPI with /dev/shm free"; fi

"$mpiexec" -np 2 --oversubscribe "$ddptrain" bench comm --max-bytes 64 --iters 1 --warmup 0 \
  --ddp.shared_memory=false </dev/null >"$work/out_mpi" 2>&1 ||
  { rc=$?; cat "$work/out_mpi"; fail "bench comm --ddp.shared_memory=false exit $rc"; }
if grep -q "node-shared memory" "$work/out_mpi"; then
  cat "$work/out_mpi"; fail "a shared-memory table although ddp.shared_memory = false"
fi
grep -q "all results checked on every rank" "$work/out_mpi" ||
  { cat "$work/out_mpi"; fail "ddp.shared_memory = false: results not checked"; }

# expect_usage ARGS...: exit 2 and one error line.
expect_usage() {
  local rc=0 lines
  "$ddptrain" "$@" </dev/null >/dev/null 2>"$work/err" || rc=$?
  lines=$(grep -c . "$work/err" || true)
  [[ $rc -eq 2 && $lines -eq 1 ]] || { cat "$work/err"; fail "ddptrain $*: exit $rc, $lines lines"; }
  echo "ok   ddptrain $*: $(cat "$work/err")"
}
expect_usage bench
expect_usage bench comm --max-bytes 1x
expect_usage bench comm --min-bytes 1MiB --max-bytes 1KiB
expect_usage bench comm --ops all_reduce,broadcast
expect_usage bench comm --iters 0
"$ddptrain" bench --help >"$work/help" || fail "bench --help: exit $?"
grep -q "usage: ddptrain bench comm" "$work/help" || fail "bench --help does not show the usage"

echo "bench comm: all checks passed"
