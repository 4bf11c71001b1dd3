#!/usr/bin/env bash
# slurm/train_cpu.sbatch across two emulated nodes: 2 nodes x 2 ranks (shared memory within a
# node, TCP between them) trains the same model as 1 node x 4 ranks (mpirun, shared memory only,
# gradients summed by MPI_Allreduce as across nodes):
# the banner says 2 node(s), 2 per node, and every parameter agrees within 1e-6.
# Usage: cpu_job_two_nodes.sh DDPTRAIN SOURCE_DIR
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kSteps=200
readonly kTolerance=1e-6 # same world size and batch; only the reduction order may differ
# train.threads fixed so both runs do the same arithmetic, whatever cores each rank sees.
deck=("$src/inputs/quickstart.cfg" "--train.steps=$kSteps" --log.every=50
  "--checkpoint.every=$kSteps" --train.threads=1)
final=checkpoints/step_$(printf %08d $kSteps).h5

cluster_start two
cd "$work"
export DDPTRAIN_BIN=$ddptrain
cluster_job 180 --nodes=2 --ntasks-per-node=2 --output="$work/job-%j.out" \
  "$src/slurm/train_cpu.sbatch" "${deck[@]}"
cat "$work/job-$JOB_ID.out"
[[ $JOB_STATE == COMPLETED ]] || fail "job $JOB_ID ended $JOB_STATE"
run=$work/runs/$JOB_ID
grep -Eq "ranks +: 4 on 2 node\(s\), 2 per node" "$run/log.txt" ||
  fail "banner of the 2-node run: $(grep ranks "$run/log.txt")"
grep -Eq "launcher +: slurm" "$run/log.txt" || fail "banner does not name slurm as the launcher"

# Where each rank runs: block distribution puts ranks 0,1 on n1 and 2,3 on n2, each node numbering
# its own local ranks from 0 (which picks the GPU on GPU nodes). With the fences the scripts ask
# for (slurm/README.md, "MPI launch").
cluster_job 60 --nodes=2 --ntasks-per-node=2 --output="$work/info-%j.out" \
  --wrap="SLURM_PMIX_FENCE=ring srun --mpi=pmix $ddptrain info"
info=$work/info-$JOB_ID.out
[[ $JOB_STATE == COMPLETED ]] || fail "info job $JOB_ID ended $JOB_STATE: $(cat "$info")"
for placement in "0 0 n1 0/2" "1 0 n1 1/2" "2 1 n2 0/2" "3 1 n2 1/2"; do
  read -r rank node host local <<<"$placement"
  grep -Eq "^ +$rank +$node +$host +$local +cpu " "$info" ||
    fail "rank $rank should be on node $node ($host) as local rank $local: $(cat "$info")"
done

# On one node ddptrain sums the buckets in shared memory, in rank order; across nodes
# MPI_Allreduce sums them in its own order, and at 4 ranks the last bits of a float sum depend on
# the order. So the 1-node run sums with MPI_Allreduce too (ddp.shared_memory = false): the same
# collective over the same ranks, whatever the layout.
mpirun -np 4 --oversubscribe "$ddptrain" train "${deck[@]}" --ddp.shared_memory=false \
  --run.dir="$work/one_node" >"$work/one_node.txt" || fail "mpirun -np 4: $(tail -n 3 "$work/one_node.txt")"
grep -Eq "ranks +: 4 on 1 node\(s\), 4 per node" "$work/one_node.txt" ||
  fail "banner of the 1-node run"
/usr/bin/python3 "$here/check_run.py" compare "$run/$final" "$work/one_node/$final" $kTolerance ||
  fail "2 nodes x 2 ranks and 1 node x 4 ranks trained different models"
echo "PASS: 2 nodes x 2 ranks == 1 node x 4 ranks within $kTolerance"
