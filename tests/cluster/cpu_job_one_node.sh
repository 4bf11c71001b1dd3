#!/usr/bin/env bash
# slurm/train_cpu.sbatch on a real one-node SLURM: the job completes with exit code 0, writes to
# runs/$SLURM_JOB_ID, its banner shows the 2 ranks srun started, metrics.h5 is complete and the
# loss fell. Usage: cpu_job_one_node.sh DDPTRAIN SOURCE_DIR
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kSteps=300

cluster_start one
cd "$work" # the job runs in the submit directory: runs/ and the job output land here
export DDPTRAIN_BIN=$ddptrain
cluster_job 120 --nodes=1 --ntasks-per-node=2 --output="$work/job-%j.out" \
  "$src/slurm/train_cpu.sbatch" "$src/inputs/quickstart.cfg" --train.steps=$kSteps --log.every=50
out=$work/job-$JOB_ID.out
cat "$out"

[[ $JOB_STATE == COMPLETED ]] || fail "job $JOB_ID ended $JOB_STATE"
[[ $(job_field "$JOB_ID" ExitCode) == 0:0 ]] || fail "exit code $(job_field "$JOB_ID" ExitCode)"
run=$work/runs/$JOB_ID
[[ -f $run/log.txt ]] || fail "no $run/log.txt: run.dir is not runs/\$SLURM_JOB_ID"
grep -Eq "ranks +: 2 on 1 node\(s\), 2 per node" "$run/log.txt" ||
  fail "banner: $(grep ranks "$run/log.txt")"
/usr/bin/python3 "$here/check_run.py" metrics "$run" $kSteps || fail "metrics.h5"
echo "PASS: job $JOB_ID completed, $kSteps steps on 2 ranks"
