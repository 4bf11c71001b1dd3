#!/usr/bin/env bash
# The GPU sbatch scripts, run on the two-node CPU cluster with their GPU request overridden
# (--gpus-per-node=0): their shell logic (ddptrain lookup, run.dir and train.resume handling, the
# srun line) works, and the ranks land as asked. Plus what all three scripts share: a bad deck
# fails the job with ddptrain's exit code 2; no ddptrain found fails it with a clear message; no
# personal paths and no build commands in the scripts; every rank they start runs with
# SLURM_PMIX_FENCE=ring (slurm/README.md, "MPI launch").
# Usage: gpu_scripts_on_cpu.sh DDPTRAIN SOURCE_DIR
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
deck=("$src/inputs/quickstart.cfg" --train.steps=50 --log.every=25)
cpu_only=(--gpus-per-node=0 --cpus-per-task=1)

readonly kNotInScripts='/home/|/work/|/scratch/|/Users/|cmake|make -j|ninja|git clone'
if grep -nE "$kNotInScripts" "$src"/slurm/*.sbatch; then
  fail "personal paths or build commands in slurm/*.sbatch (above)"
fi

cluster_start two
cd "$work"
# The ranks run ddptrain through a wrapper that notes their job and SLURM_PMIX_FENCE first.
unset SLURM_PMIX_FENCE
fences=$work/fences.txt
cat >"$work/ddptrain_noting_fence" <<EOF
#!/bin/bash
echo "\$SLURM_JOB_ID \${SLURM_PMIX_FENCE-unset}" >>"$fences"
exec "$ddptrain" "\$@"
EOF
chmod +x "$work/ddptrain_noting_fence"
export DDPTRAIN_BIN=$work/ddptrain_noting_fence
jobs=()

cluster_job 60 "${cpu_only[@]}" --ntasks-per-node=2 --output="$work/1node.out" \
  "$src/slurm/train_1node.sbatch" "${deck[@]}" --run.dir=own_dir --train.resume=none
cat "$work/1node.out"
[[ $JOB_STATE == COMPLETED ]] || fail "train_1node.sbatch: job ended $JOB_STATE"
jobs+=("$JOB_ID")
grep -Eq "ranks +: 2 on 1 node\(s\), 2 per node" "$work/own_dir/log.txt" ||
  fail "train_1node.sbatch did not keep the caller's run.dir, or the ranks differ"
if ! grep -q -- "--train.resume=none" "$work/1node.out" ||
  grep -q -- "--train.resume=auto" "$work/1node.out"; then
  fail "train_1node.sbatch did not keep the caller's train.resume"
fi

cluster_job 60 "${cpu_only[@]}" --nodes=2 --ntasks-per-node=2 --output="$work/16gpu.out" \
  "$src/slurm/train_4node_16gpu.sbatch" "${deck[@]}"
cat "$work/16gpu.out"
[[ $JOB_STATE == COMPLETED ]] || fail "train_4node_16gpu.sbatch: job ended $JOB_STATE"
jobs+=("$JOB_ID")
grep -Eq "ranks +: 4 on 2 node\(s\), 2 per node" "$work/runs/$JOB_ID/log.txt" ||
  fail "train_4node_16gpu.sbatch: ranks, or run.dir is not runs/\$SLURM_JOB_ID"

cluster_job 60 --output="$work/bad_deck.out" "$src/slurm/train_cpu.sbatch" "$work/no_such_deck.cfg"
[[ $JOB_STATE == FAILED && $(job_field "$JOB_ID" ExitCode) == 2:0 ]] ||
  fail "bad deck: $JOB_STATE, exit code $(job_field "$JOB_ID" ExitCode), expected FAILED 2:0"
jobs+=("$JOB_ID")
# Each script's step ran ddptrain (the bad deck's may end before its second rank starts), and
# every rank that ran it had the ring.
for job in "${jobs[@]}"; do
  grep -q "^$job " "$fences" || fail "job $job: no rank ran ddptrain ($(cat "$fences"))"
done
if grep -v " ring$" "$fences"; then
  fail "ranks above ran without SLURM_PMIX_FENCE=ring"
fi

unset DDPTRAIN_BIN
cluster_job 60 --output="$work/no_binary.out" --export="PATH=/usr/bin:/bin,SLURM_CONF=$SLURM_CONF" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}"
[[ $JOB_STATE == FAILED ]] || fail "no ddptrain: job ended $JOB_STATE"
grep -q "no ddptrain: run \`module load ddptrain\` before sbatch, or set DDPTRAIN_BIN" \
  "$work/no_binary.out" ||
  fail "no ddptrain: $(cat "$work/no_binary.out")"
echo "PASS: GPU scripts run on CPU nodes; exit codes and messages of the scripts"
