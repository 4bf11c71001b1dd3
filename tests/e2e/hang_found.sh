#!/usr/bin/env bash
# Hangs found by the pace of training (dist.hang_factor, dist.hang_floor_s) and explained by the
# ranks' flight records (run.dir/flight, `ddptrain inspect`). At 3 ranks:
#  1. Rank 1 leaves out one bucket's all-reduce (DDPTRAIN_TEST_SKIP_ALL_REDUCE=1:8): the analysis
#     names the first number where the ranks' collectives differ, and both collectives.
#  2. SIGSTOP to rank 1 after the warm-up, dist.hang_floor_s = 10 s (the default 30 s is
#     watchdog_in_phases_*'s): exit code 5 with a report saying that the hang rule found it,
#     max(dist.hang_floor_s, 5 x the step time) (the rule under
#     test: without it, dist.timeout_s = 600 s would end the job, with another report; the time
#     taken is printed, not asserted), flight files from ranks 0 and 2 and none from
#     rank 1, and an analysis that names rank 1, the collective's number and its operation; the
#     same analysis from `ddptrain inspect run.dir/flight`. run.dir/flight already holds files of
#     other jobs (part 1's rank 1, and a rank 5 of a job of 6 ranks): both analyses leave them out
#     and say so.
#  3. No false alarm with a hang floor of 1 s: rank 0 sleeps 3 s at the end of each evaluation
#     and each checkpoint write, still inside it (DDPTRAIN_TEST_SLOW_PHASES=0:3000, 1000 x a step),
#     while the others wait for it in the next step's collectives; then the run resumes from its
#     checkpoint and goes on.
# Usage: hang_found.sh MPIEXEC DDPTRAIN DECK
set -uo pipefail
source "$(dirname "$0")/common.sh"

launcher=
stopped=
trap '[[ -n $stopped ]] && kill -KILL $stopped 2>/dev/null; [[ -n $launcher ]] && kill -KILL $launcher 2>/dev/null; rm -rf "$work"' EXIT

# wait_for_line FILE PATTERN SECONDS: true once FILE has a line matching PATTERN.
wait_for_line() {
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# 1. One rank leaves out a bucket's all-reduce: the ranks' collectives part. Small buckets, so that
# the skipping rank goes on to the next bucket's all-reduce.
DDPTRAIN_TEST_SKIP_ALL_REDUCE=1:8 "$mpiexec" -np 3 --oversubscribe --bind-to none \
  -x DDPTRAIN_TEST_SKIP_ALL_REDUCE "$ddptrain" train "$deck" --run.dir="$work/skip" \
  --train.steps=40 --checkpoint.every=0 --dist.hang_floor_s=2 --ddp.bucket_mb=0.1 \
  --ddp.first_bucket_mb=0.05 >"$work/skip.txt" 2>&1 &
launcher=$!
wait_guarded "$launcher" 120 || fail "skipped all-reduce: still running after 120 s"
launcher=
[[ $rc -eq 5 ]] || fail "skipped all-reduce: exit code $rc, expected 5: $(tail -5 "$work/skip.txt")"
"$ddptrain" inspect "$work/skip/flight" >"$work/skip_inspect.txt" 2>&1 || fail "inspect failed"
cat "$work/skip_inspect.txt"
/usr/bin/python3 - "$work/skip_inspect.txt" <<'PY' || fail "the analysis of the skipped all-reduce"
import re
import sys
text = open(sys.argv[1]).read()
part = re.search(r"^collective #(\d+) of 'training' is where the ranks part \(they are in different collectives\):$",
                 text, re.M)
assert part, "no divergent collective named"
number = part.group(1)
sizes = {}
for rank in (0, 1, 2):
    line = re.search(rf"^  rank {rank} \(.*\): #{number} all_reduce of (\d+) B ", text, re.M)
    assert line, f"rank {rank}'s collective #{number} is not named as an all_reduce"
    sizes[rank] = int(line.group(1))
assert sizes[0] == sizes[2] != sizes[1], f"sizes {sizes}: rank 1's should differ from the others'"
print(f"collective #{number}: ranks 0 and 2 in an all_reduce of {sizes[0]} B, rank 1 in one of {sizes[1]} B")
PY

# 2. A stopped rank, beside files of other jobs: part 1's rank 1 (a job of the
# same size) and a rank 5 of a job of 6 ranks.
mkdir -p "$work/stop/flight"
cp "$work/skip/flight/rank_00001.h5" "$work/stop/flight/rank_00001.h5"
cp "$work/skip/flight/rank_00002.h5" "$work/stop/flight/rank_00005.h5"
/usr/bin/python3 - "$work/stop/flight/rank_00005.h5" <<'PY' || fail "could not make a file of a 6-rank job"
import sys
import h5py
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs.modify("rank", 5)
    f.attrs.modify("world_size", 6)
PY
"$mpiexec" -np 3 --oversubscribe --bind-to none "$ddptrain" train "$deck" --run.dir="$work/stop" \
  --train.steps=1000000 --checkpoint.every=0 --log.every=100 --log.progress=lines \
  --dist.hang_floor_s=10 >"$work/stop.txt" 2>&1 &
launcher=$!
wait_for_line "$work/stop.txt" "step \+300/" 120 || fail "training did not reach step 300: $(tail -5 "$work/stop.txt")"
stopped=$(rank_pid "$launcher" 1) || fail "no rank 1"
kill -STOP "$stopped"
start=$SECONDS
wait_guarded "$launcher" 120 || fail "still running after 120 s: the hang rule did not end it"
launcher=
took=$((SECONDS - start))
echo "stopped rank: exit code $rc after $took s"
grep -a -A12 "collective hung" "$work/stop.txt" | grep -v "^--"
[[ $rc -eq 5 ]] || fail "exit code $rc, expected 5: $(tail -5 "$work/stop.txt")"
# (The training collective's paced deadline is the floor here, and the watchdog looks at paced
# deadlines before it asks its silence question: the pace's wording, not the silence's.)
grep -aq "collective hung: '.*' at step [0-9]* did not complete within 10.0 s (dist.hang_factor = 5 x the slowest recent step" \
  "$work/stop.txt" || fail "the report does not say the hang rule found it"
[[ -f $work/stop/flight/rank_00000.h5 && -f $work/stop/flight/rank_00002.h5 ]] ||
  fail "no flight files from the live ranks 0 and 2: $(ls "$work/stop/flight" 2>&1)"
# stop.txt may hold bytes that are not text (Open MPI 5's output): grep -a reads it as text.
# The report's analysis (the stopped rank may write its file later, if Open MPI wakes it with
# SIGCONT before ending it; inspect then shows that too).
grep -aqF "flight records of rank(s) 0, 2 of 3; no file from rank(s) 1 (stopped" "$work/stop.txt" ||
  fail "the report's analysis does not name rank 1 as the one without records"
grep -aqE "^left out 2 flight file\(s\) of other jobs: rank 1 of a job of 3 ranks, .*; rank 5 of a job of 6 ranks" \
  "$work/stop.txt" || fail "the report does not say it left out the other jobs' files"
part=$(grep -aoE "^collective #[0-9]+ of 'training' is where the ranks part:$" "$work/stop.txt") ||
  fail "the report's analysis names no collective"
grep -aqE "^  rank 0 \($(hostname), step [0-9]+\): #[0-9]+ [a-z_ ']+ of [0-9]+ B .*: started, not completed" \
  "$work/stop.txt" || fail "the analysis does not show rank 0's operation, waiting"
grep -aqF "ranks with no record, so not known to have reached #" "$work/stop.txt" ||
  fail "the analysis does not name rank 1 at that collective"
"$ddptrain" inspect "$work/stop/flight" >"$work/stop_inspect.txt" 2>&1 || fail "inspect failed"
cat "$work/stop_inspect.txt"
# (Rank 1's own late file, if it wrote one, replaces part 1's.)
grep -aqE "^left out [12] flight file\(s\) of other jobs: .*rank 5 of a job of 6 ranks" \
  "$work/stop_inspect.txt" || fail "inspect does not say it left out the other jobs' files"
# With rank 1's late file, rank 1 may be seen stuck in an earlier collective, never a later one.
reported=${part//[^0-9]/}
inspected=$(grep -oE "^collective #[0-9]+ of 'training' is where the ranks part" "$work/stop_inspect.txt" |
  tr -dc 0-9) || fail "inspect names no collective"
((inspected <= reported)) || fail "inspect names collective #$inspected, after the report's #$reported"
gone_within 5 "$stopped" || fail "the stopped rank is still there"
stopped=

# 3. Long phases on rank 0 are not hangs, nor is a resumed run's start.
slow_phases() {  # NAME OPTIONS...
  local name=$1
  shift
  DDPTRAIN_TEST_SLOW_PHASES=0:3000 "$mpiexec" -np 3 --oversubscribe --bind-to none \
    -x DDPTRAIN_TEST_SLOW_PHASES "$ddptrain" train "$deck" --run.dir="$work/phases" \
    --data.val_fraction=0.1 --eval.every=10 --checkpoint.every=20 --dist.hang_floor_s=1 \
    --log.every=10 --log.progress=lines "$@" >"$work/$name.txt" 2>&1 &
  launcher=$!
  wait_guarded "$launcher" 120 || fail "$name: still running after 120 s"
  launcher=
  grep -aE "eval at|checkpoint:|test hook" "$work/$name.txt"
  # The slow phases happened: rank 0 says where it sleeps.
  local slept
  slept=$(grep -ac "test hook: sleeping 3.000 s at the end of '\(evaluation\|checkpoint write\) at step" \
    "$work/$name.txt")
  ((slept >= 3)) || fail "$name: rank 0 slept in $slept phases, expected 3 or more"
  [[ $rc -eq 0 ]] || fail "$name: exit code $rc with long phases on rank 0: $(grep -a -A3 "error" "$work/$name.txt" | head -8)"
  if grep -aq "hung\|timed out" "$work/$name.txt"; then fail "$name: a hang was called"; fi
}
slow_phases phases --train.steps=40
slow_phases resumed --train.steps=60 --train.resume=auto
grep -aq "resum" "$work/resumed.txt" || fail "the second run did not resume"
echo "hang found in $took s with its flight analysis; no false alarm across evaluations and checkpoints"
