#!/usr/bin/env bash
# A failed rank costs one restart inside the allocation, not a trip through the queue:
# slurm/train_cpu.sbatch on 3 emulated nodes with DDPTRAIN_SPARE_NODES=1 runs 2 nodes x 2 ranks;
# SIGKILL to rank 3 (on n2) after the first checkpoint ends the step, and the script launches it
# again at once on n1 and n3 (n2 left out), resuming from the newest checkpoint. Checked: the job
# completes without a requeue, its log names the failure, the node left out and the restart; the
# final parameters equal bit for bit those of an uninterrupted 2 x 2 run; the time from the kill
# to the resumed run's first step is printed (a figure, not asserted). A deck error (exit 2) in
# the same setting ends the job at once, without a restart.
# Usage: restart_in_allocation.sh DDPTRAIN SOURCE_DIR
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kSteps=300
deck=("$src/inputs/quickstart.cfg" "--train.steps=$kSteps" --log.every=25
  --checkpoint.every=100 --checkpoint.keep=20 --train.threads=1 --log.progress=lines)
final=checkpoints/step_$(printf %08d $kSteps).h5

cluster_start three
cd "$work"
export DDPTRAIN_BIN=$ddptrain

# The reference: the same 2 nodes x 2 ranks, never interrupted.
cluster_job 300 --nodes=2 --ntasks-per-node=2 --output="$work/ref-%j.out" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}"
[[ $JOB_STATE == COMPLETED ]] || fail "reference job ended $JOB_STATE: $(tail "$work/ref-$JOB_ID.out")"
reference=$work/runs/$JOB_ID/$final

# rank_pid JOB RANK: the pid of the ddptrain process of that job's rank, once it exists.
rank_pid() {
  local pid
  for pid in $(pgrep -f "$ddptrain train" || true); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_JOB_ID=$1" &&
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$2"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

export DDPTRAIN_SPARE_NODES=1
JOB_ID=$(sbatch --parsable --nodes=3 --ntasks-per-node=2 --output="$work/job-%j.out" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}")
JOB_ID=${JOB_ID%%;*}
run=$work/runs/$JOB_ID
for ((i = 0; i < 600; i++)); do
  [[ -e $run/checkpoints/step_00000100.h5 ]] && break
  sleep 0.2
done
[[ -e $run/checkpoints/step_00000100.h5 ]] || fail "no checkpoint after 120 s: $(cat "$work/job-$JOB_ID.out")"
pid=$(rank_pid "$JOB_ID" 3) || fail "no process of rank 3"
killed_at=$(date +%s)
kill -9 "$pid"
echo "killed rank 3 (pid $pid) at $(date -d "@$killed_at" '+%F %T')"
for ((i = 0; i < 1500; i++)); do
  state=$(squeue -h -t all -j"$JOB_ID" -o %T)
  [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED ]] && break
  sleep 0.2
done
out=$work/job-$JOB_ID.out
cat "$out"
[[ $state == COMPLETED ]] || fail "job $JOB_ID ended ${state:-unknown}"
[[ $(job_field "$JOB_ID" Restarts) == 0 ]] || fail "the job went back to the queue"
# SLURM 22.05 names the killed task ("task 3 on n2: Killed"); 24.11 every task it ended on that
# node ("tasks 2-3 on n2: Killed").
grep -Eq "step failed \(tasks? [0-9,-]+ on n2: Killed\): restart 1 of 3 inside the allocation, leaving out n2" "$out" ||
  fail "the log does not say the restart, its reason and the node left out"
grep -Eq "ranks +: 4 on 2 node\(s\)" "$run/log.txt" || fail "the restarted run is not 2 x 2"
resumed_line=$(grep -n "resumed  *: at step" "$run/log.txt" | head -1 | cut -d: -f1)
[[ -n $resumed_line ]] || fail "the restarted run did not resume from a checkpoint"
first_step=$(tail -n +"$resumed_line" "$run/log.txt" | grep -m1 -E "step +[0-9]+/" || true)
[[ -n $first_step ]] || fail "no progress line after the resume"
stamp=$(sed -E 's/^\[([0-9-]+ [0-9:]+)\].*/\1/' <<<"$first_step")
took=$(($(date -d "$stamp" +%s) - killed_at))
echo "from the kill to the resumed run's first logged step: $took s (log.every = 25: that row)"
/usr/bin/python3 "$here/check_run.py" compare "$run/$final" "$reference" 0 ||
  fail "the restarted run ended with other parameters than the uninterrupted one"

# A deck error is not worth a restart: the job fails at once with its code.
cluster_job 120 --nodes=3 --ntasks-per-node=2 --output="$work/bad-%j.out" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}" --train.bogus=1
grep -q "step failed" "$work/bad-$JOB_ID.out" && fail "a deck error was restarted: $(cat "$work/bad-$JOB_ID.out")"
[[ $JOB_STATE == FAILED ]] || fail "the bad deck's job ended $JOB_STATE"
echo "PASS: a killed rank cost one restart inside the allocation ($took s), bit for bit; exit 2 not retried"
