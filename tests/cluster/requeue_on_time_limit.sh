#!/usr/bin/env bash
# A job that hits its time limit continues where it stopped: slurm/train_cpu.sbatch with a
# 1-minute limit and `--signal=USR1@25` gets SIGUSR1, ddptrain checkpoints and exits 75, the script
# requeues the job, the requeued job (same id, same run.dir) resumes with train.resume=auto and
# finishes; its final parameters equal bit for bit those of an uninterrupted run of the deck.
# Usage: requeue_on_time_limit.sh DDPTRAIN SOURCE_DIR
#
# Timing, measured here on SLURM 22.05.8:
# - slurmctld tests time limits every 30 s (from its own start, not configurable) and sends the
#   --signal=SIG@LEAD signal at the first test that finds at most LEAD + 30 s left, i.e. between
#   LEAD and LEAD + 30 s before the limit (LEAD 2: 31 s before it). With a 60 s limit and LEAD 25
#   it comes 5 to 35 s into the run: late enough that the ranks are up and have their handlers
#   (a lead of 30 s or more may fire in the first second), early enough to leave 25 s for the
#   checkpoint. The uninterrupted run lasts ~45 s so that the signal always finds it training.
#   Each requeued run gets the signal again, so a run of any length gets there in as many pieces
#   as it needs (here usually 2 or 3).
# - What makes a run last: rank 0 sleeps kSleepMs in each step (the test hook
#   DDPTRAIN_TEST_SLOW_RANK=R:MS), so the job's length is its step count times that, on any
#   machine, while its arithmetic (all this test compares) is a few seconds' worth. The
#   uninterrupted reference runs without the sleeps, in those few seconds. Mostly sleeping ranks
#   also leave slurmctld the cores for its time-limit test (a starved slurmctld once sent the
#   signal with the limit itself, too late: seen in CI on Debian 13, 62 s late).
# - A requeued job becomes eligible AuthInfo=cred_expire seconds (default 120) plus 1 after the
#   requeue (the slurmd keeps the revoked credential of its last run, under the same job id), and
#   then starts at the next scheduling pass: the main scheduler runs every sched_interval
#   (default 60 s) and backfill every bf_interval (default 30 s); nothing else wakes them when a
#   begin time passes. So about 2 to 2.5 minutes between runs with the defaults. The test cluster
#   sets cred_expire=5 (SLURM's minimum), sched_interval=1 and bf_interval=1: ~7 s.
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kTimeLimit=1  # minutes: SLURM's smallest
readonly kLeadS=25     # see above: the signal comes 5..35 s into the run
readonly kSleepMs=100  # by rank 0 in each step of the job's runs
readonly kStopped=75
deck=$here/requeue.cfg

cluster_start one
cd "$work"
export DDPTRAIN_BIN=$ddptrain
steps=500 # x kSleepMs: ~50 s, well over the 35 s the signal may take (whole hundreds: log.every)

# Two ways the signal can miss a run, both this machine's and not ddptrain's, each answered by
# another job (the test passes only with a run that was interrupted and requeued):
#  - the run finished before the signal: again, twice as long;
#  - slurmctld ran its time-limit test more than 10 s late and sent the signal with the time
#    limit itself: the job ends TIMEOUT although ddptrain checkpointed and exited 75: again with
#    the same steps.
for attempt in 1 2 3; do
  overrides=(--train.steps="$steps" --checkpoint.every="$steps")
  SECONDS=0
  DDPTRAIN_TEST_SLOW_RANK=0:$kSleepMs cluster_job 300 --nodes=1 --ntasks-per-node=2 \
    --time=$kTimeLimit --signal=USR1@$kLeadS --output="$work/job-%j.out" \
    "$src/slurm/train_cpu.sbatch" "$deck" "${overrides[@]}"
  echo "job $JOB_ID: $JOB_STATE after $SECONDS s, $(job_field "$JOB_ID" Restarts) restart(s)"
  out=$work/job-$JOB_ID.out
  cat "$out"
  ((attempt < 3)) || break
  if [[ $JOB_STATE == COMPLETED ]] && ! grep -q "stopped by SIGUSR1 at step" "$out"; then
    steps=$((2 * steps))
    echo "job $JOB_ID finished before the signal came; again with $steps steps"
  elif [[ $JOB_STATE == TIMEOUT ]] && (($(job_field "$JOB_ID" Restarts) == 0)); then
    echo "job $JOB_ID: the signal came with the time limit, too late to requeue; again"
  else
    break
  fi
done
run=$work/runs/$JOB_ID
final=checkpoints/step_$(printf %08d "$steps").h5

[[ $JOB_STATE == COMPLETED ]] || fail "job $JOB_ID ended $JOB_STATE"
[[ $(job_field "$JOB_ID" ExitCode) == 0:0 ]] || fail "exit code $(job_field "$JOB_ID" ExitCode)"
stopped=$(sed -n 's/.*stopped by SIGUSR1 at step \([0-9]*\) .*/\1/p' "$out" | head -n 1)
[[ -n $stopped ]] ||
  fail "no 'stopped by SIGUSR1 at step N' in the job output: the run ended before the signal"
grep -q "(exit $kStopped): requeueing job $JOB_ID" "$out" ||
  fail "the script did not requeue on exit $kStopped"
(($(job_field "$JOB_ID" Restarts) >= 1)) || fail "Restarts=$(job_field "$JOB_ID" Restarts)"
grep -Eq "resumed +: at step $stopped\b" "$out" ||
  fail "the requeued run did not resume at step $stopped"
((stopped < steps)) || fail "stopped at step $stopped of $steps"
/usr/bin/python3 "$here/check_run.py" metrics "$run" "$steps" || fail "metrics.h5 after the requeue"

SECONDS=0
mpirun -np 2 --oversubscribe "$ddptrain" train "$deck" "${overrides[@]}" \
  --run.dir="$work/uninterrupted" >"$work/uninterrupted.txt" || fail "uninterrupted run"
echo "uninterrupted run: $SECONDS s"
/usr/bin/python3 "$here/check_run.py" compare "$run/$final" "$work/uninterrupted/$final" 0 ||
  fail "the requeued run ended with other parameters than the uninterrupted one"
echo "PASS: stopped at step $stopped by SIGUSR1, requeued, resumed, equal to the uninterrupted run"
