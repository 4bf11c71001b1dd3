#!/usr/bin/env bash
# Restarts inside the allocation (relaunch_step of slurm/*.sbatch), through slurm/train_cpu.sbatch
# on 3 emulated nodes. Every task runs ddptrain through a wrapper (DDPTRAIN_BIN,
# ddptrain_noting_node.sh) that first notes "$SLURM_STEP_ID $SLURMD_NODENAME $SLURM_PROCID", so each
# case checks where each launch really ran, not what the script says it did. In one cluster:
#  1. Exit 5 (a collective timed out, a peer lost), DDPTRAIN_SPARE_NODES=0: every rank of the
#     first launch exits 5 (the wrapper, instead of training); the script launches the step again
#     at once on the same 3 nodes (none left out), and that launch trains to the end: exit 0.
#  2. Out of restarts: DDPTRAIN_RESTARTS=1 and every launch exits 5: two launches, then the job
#     fails with exit code 5, saying that no restarts are left.
#  3. A killed rank, one spare node: DDPTRAIN_SPARE_NODES=1 runs 2 nodes x 2 ranks. In the first
#     launch rank 3 (on n2) sleeps after writing the first checkpoint (the test hook
#     DDPTRAIN_TEST_SLOW_PHASES, longer than the test may last), so that launch cannot end before
#     the test finds rank 3 and kills it (SIGKILL). The script launches the step again at once on
#     n1 and n3, resuming from that checkpoint. Checked: the job completes with exit code 0 without a
#     requeue, its log names the failure, the node left out and the restart; the second launch ran
#     on n1 and n3 only; the final parameters equal bit for bit those of an uninterrupted 2 x 2
#     run; the time from the kill to the resumed run's first logged step is printed (a figure, not
#     asserted).
#  4. A deck error (exit 2) in the setting of 3 ends the job at once with exit code 2: one launch.
# Usage: restart_in_allocation.sh DDPTRAIN SOURCE_DIR
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kSteps=100
readonly kEvery=50 # steps between checkpoints
readonly kHoldMs=600000 # rank 3's sleep in case 3: past the test's ctest timeout (420 s)
readonly kRetryable=5 # as in the wrapper
deck=("$src/inputs/quickstart.cfg" "--train.steps=$kSteps" --log.every=25
  "--checkpoint.every=$kEvery" --checkpoint.keep=20 --train.threads=1 --log.progress=lines)
short_deck=("$src/inputs/quickstart.cfg" --train.steps=50 --log.every=25 --train.threads=1)
final=checkpoints/step_$(printf %08d $kSteps).h5
first=checkpoints/step_$(printf %08d $kEvery).h5

cluster_start three
cd "$work"

# Every task through the wrapper that notes where it ran (and acts out cases 1 and 2).
export DDPTRAIN_BIN=$here/ddptrain_noting_node.sh NOTED_DDPTRAIN=$ddptrain NOTED_DIR=$work

# launches JOB: the job's launches (job steps) as STEP:NODES:TASKS, e.g. "0:n1,n2:4 1:n1,n3:4".
launches() {
  [[ -e $work/launches-$1.txt ]] || return 0
  sort -k1,1n -k2,2 "$work/launches-$1.txt" | awk '
    { if (!($1 in tasks)) order[++n] = $1
      tasks[$1]++
      if (!seen[$1 " " $2]++) nodes[$1] = nodes[$1] (nodes[$1] == "" ? "" : ",") $2 }
    END {
      for (i = 1; i <= n; i++)
        printf "%s%s:%s:%d", (i > 1 ? " " : ""), order[i], nodes[order[i]], tasks[order[i]]
    }'
}

# expect_job STATE EXIT_CODE LAUNCHES: the job JOB_ID ended so, after these launches (a glob).
expect_job() {
  local out=$work/job-$JOB_ID.out got
  got="$JOB_STATE, exit code $(job_field "$JOB_ID" ExitCode), launches $(launches "$JOB_ID")"
  echo "job $JOB_ID: $got"
  # shellcheck disable=SC2053 # $3 is a pattern
  [[ $got == "$1, exit code $2, launches "$3 ]] ||
    fail "job $JOB_ID: $got; expected $1, exit code $2, launches $3: $(cat "$out")"
  [[ $(job_field "$JOB_ID" Restarts) == 0 ]] || fail "job $JOB_ID went back to the queue"
}

# 1. Exit 5 is restarted; with no spare nodes the restart uses every node again.
SECONDS=0
CASE_FAIL=first DDPTRAIN_SPARE_NODES=0 cluster_job 120 --nodes=3 --ntasks-per-node=1 \
  --output="$work/job-%j.out" "$src/slurm/train_cpu.sbatch" "${short_deck[@]}"
expect_job COMPLETED 0:0 "0:n1,n2,n3:3 1:n1,n2,n3:3"
out=$work/job-$JOB_ID.out
said="step failed \(tasks? [0-9,-]+ on n[123]: Exited with exit code $kRetryable\): restart 1 of 3"
grep -Eq "$said inside the allocation, no node left out" "$out" ||
  fail "the log does not say the restart on exit $kRetryable: $(cat "$out")"
echo "case 1 (exit 5 restarted, DDPTRAIN_SPARE_NODES=0): $SECONDS s"

# 2. DDPTRAIN_RESTARTS bounds the launches; the job ends with the last launch's exit code.
SECONDS=0
CASE_FAIL=all DDPTRAIN_RESTARTS=1 cluster_job 120 --nodes=1 --ntasks-per-node=2 \
  --output="$work/job-%j.out" "$src/slurm/train_cpu.sbatch" "${short_deck[@]}"
expect_job FAILED $kRetryable:0 "0:n[123]:2 1:n[123]:2"
out=$work/job-$JOB_ID.out
grep -q "restart 1 of 1 inside the allocation" "$out" || fail "no restart 1 of 1: $(cat "$out")"
said="step failed \(.*Exited with exit code $kRetryable\); no restarts left"
grep -Eq "$said \(DDPTRAIN_RESTARTS=1\)" "$out" ||
  fail "the log does not say the restarts ran out: $(cat "$out")"
echo "case 2 (DDPTRAIN_RESTARTS=1 run out): $SECONDS s"

# 3. The reference: the same 2 nodes x 2 ranks, never interrupted.
SECONDS=0
cluster_job 300 --nodes=2 --ntasks-per-node=2 --output="$work/job-%j.out" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}"
expect_job COMPLETED 0:0 "0:n[123],n[123]:4"
reference=$work/runs/$JOB_ID/$final
echo "case 3, the uninterrupted reference: $SECONDS s"

# rank_pid JOB STEP RANK: the pid of the ddptrain process of that rank of that job step.
rank_pid() {
  local pid environ
  for pid in $(pgrep -f "$ddptrain train" || true); do
    environ=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ") || continue
    if grep -qx "SLURM_JOB_ID=$1" <<<"$environ" && grep -qx "SLURM_STEP_ID=$2" <<<"$environ" &&
      grep -qx "SLURM_PROCID=$3" <<<"$environ"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

SECONDS=0
JOB_ID=$(CASE_HOLD_MS=$kHoldMs DDPTRAIN_SPARE_NODES=1 sbatch --parsable --nodes=3 \
  --ntasks-per-node=2 --output="$work/job-%j.out" "$src/slurm/train_cpu.sbatch" "${deck[@]}")
JOB_ID=${JOB_ID%%;*}
run=$work/runs/$JOB_ID
out=$work/job-$JOB_ID.out
for ((i = 0; i < 600; i++)); do
  [[ -e $run/$first ]] && break
  sleep "$kPollS"
done
[[ -e $run/$first ]] || fail "no checkpoint after 120 s: $(cat "$out")"
# Rank 3 sleeps in its checkpoint write now, so the launch is still running; the lookup retries
# only for a process list read while the ranks were still starting.
pid=
for ((i = 0; i < 150; i++)); do
  pid=$(rank_pid "$JOB_ID" 0 3) && break
  sleep "$kPollS"
done
[[ -n $pid ]] || fail "no process of rank 3 of the first launch after 30 s: $(cat "$out")"
killed_at=$(date +%s)
kill -9 "$pid"
echo "killed rank 3 (pid $pid) at $(date -d "@$killed_at" '+%F %T')"
for ((i = 0; i < 1500; i++)); do
  JOB_STATE=$(squeue -h -t all -j"$JOB_ID" -o %T)
  [[ $JOB_STATE == COMPLETED || $JOB_STATE == FAILED || $JOB_STATE == CANCELLED ]] && break
  sleep "$kPollS"
done
cat "$out"
expect_job COMPLETED 0:0 "0:n1,n2:4 1:n1,n3:4"
# SLURM 22.05 names the killed task ("task 3 on n2: Killed"); 24.11 every task it ended on that
# node ("tasks 2-3 on n2: Killed").
said="step failed \(tasks? [0-9,-]+ on n2: Killed\): restart 1 of 3 inside the allocation"
grep -Eq "$said, leaving out n2" "$out" ||
  fail "the log does not say the restart, its reason and the node left out"
# log.txt holds both launches' lines: the resumed run's start at step kEvery (the checkpoint rank 3
# was held at), then its progress.
resumed_line=$(grep -n -E "resumed +: at step $kEvery\b" "$run/log.txt" | head -1 | cut -d: -f1)
[[ -n $resumed_line ]] || fail "the restarted run did not resume at step $kEvery"
first_step=$(tail -n +"$resumed_line" "$run/log.txt" | grep -m1 -E "step +[0-9]+/" || true)
[[ -n $first_step ]] || fail "no progress line after the resume"
stamp=$(sed -E 's/^\[([0-9-]+ [0-9:]+)\].*/\1/' <<<"$first_step")
took=$(($(date -d "$stamp" +%s) - killed_at))
echo "from the kill to the resumed run's first logged step: $took s (log.every = 25: that row)"
/usr/bin/python3 "$here/check_run.py" compare "$run/$final" "$reference" 0 ||
  fail "the restarted run ended with other parameters than the uninterrupted one"
echo "case 3 (a killed rank, one spare node): $SECONDS s"

# 4. A deck error is not worth a restart: the job fails at once with its code.
SECONDS=0
DDPTRAIN_SPARE_NODES=1 cluster_job 120 --nodes=3 --ntasks-per-node=2 --output="$work/job-%j.out" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}" --train.bogus=1
# One launch (the tasks that srun ended at once, after the first exit 2, may not have noted it).
expect_job FAILED 2:0 "0:*"
[[ $(launches "$JOB_ID" | wc -w) == 1 ]] || fail "the bad deck's launches: $(launches "$JOB_ID")"
if grep -q "step failed" "$work/job-$JOB_ID.out"; then
  fail "a deck error was restarted: $(cat "$work/job-$JOB_ID.out")"
fi
echo "case 4 (a deck error): $SECONDS s"
echo "PASS: exit 5 restarted on every node, restarts bounded; a killed rank cost one restart" \
  "inside the allocation ($took s) on the other nodes, bit for bit; exit 2 not retried"
