#!/usr/bin/env bash
# PMIx fence soak: how often an Open MPI rank crashes inside MPI_Init under srun across two nodes,
# for each of SLURM's fence algorithms (SLURM_PMIX_FENCE). On the two emulated nodes of
# tests/cluster (2 ranks each), one job runs STEPS srun steps of a 15-line MPI program per
# algorithm: MPI_Init_thread, then at once an MPI_Allreduce, the first message a rank can receive
# while a slower one is still in MPI_Init. Prints the failed steps per algorithm and what the
# first failure printed. Not a CI test: minutes, and the failures are a matter of chance.
#
# Why (slurm/README.md, "MPI launch"): this script with its two busy loops on the
# 2-core VM. Debian 13 (Open MPI 5.0.7, SLURM 24.11), 200 steps each: mixed (SLURM's default: the
# data fence by a ring, the barrier by a tree) 7 failed, tree 76, ring 0; the failures a signal 11
# (at 0xe0 in mca_pml_ob1_recv_frag_callback_match: inside MPI_Init's data fence, before
# MPI_COMM_WORLD exists in the receiving rank), the crash a CI run once met (slurm_cpu_job_two_nodes,
# Debian 13 leg). Debian 12 (Open MPI 4.1.4, SLURM 22.05), 150 steps each: mixed 2, tree 19 and 14
# (two runs; signal 11 at address 0, "a system call failed during shared memory initialization"),
# ring 0. The scripts in slurm/ and the modulefile therefore ask for the ring.
#
# Usage: share/dev/pmix_fence_soak.sh [STEPS] [ALGORITHM...]   (default 100; mixed tree ring)
# Env:   SOAK_BUSY_LOOPS (default: the cores, `nproc --all`): busy loops run beside the steps
#        (the CI crash came under load; without it on Debian 13, the default failed 0 of 20 steps
#        and 0 of 30 `ddptrain info` jobs, the tree 1 of 5). 0: none.
# Needs root and SLURM (share/dev/setup.sh); on the Debian 13 stack (which passes no environment):
#   bash share/dev/ci/debian13.sh cpu bash -c 'SOAK_BUSY_LOOPS=2 bash share/dev/pmix_fence_soak.sh 200'
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
steps=${1:-100}
algorithms=("${@:2}")
((${#algorithms[@]})) || algorithms=(mixed tree ring)
busy_loops=${SOAK_BUSY_LOOPS:-$(nproc --all)}
# shellcheck source=../../tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
cluster_start two
cd "$work" || exit 1

cat >init_race.c <<'EOF'
#include <mpi.h>
int main(int argc, char** argv) {
  int provided, rank, size, sum = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return sum == size * (size - 1) / 2 ? 0 : 1;
}
EOF
mpicc -O2 -o init_race init_race.c || fail "mpicc (package libopenmpi-dev)"

# soak.sbatch ALGORITHM STEPS: the steps of one algorithm, in one allocation.
cat >soak.sbatch <<'EOF'
#!/bin/bash
export SLURM_PMIX_FENCE=$1
failed=0
for ((k = 0; k < $2; k++)); do
  srun --mpi=pmix ./init_race >"step-$1-$k.out" 2>&1 && continue
  failed=$((failed + 1))
  [[ $failed -gt 1 ]] || first=$(grep -m 1 -A 8 -E "signal|error" "step-$1-$k.out")
done
echo "SLURM_PMIX_FENCE=$1: $failed of $2 steps failed"
if [[ -n ${first:-} ]]; then
  echo "  the first failure said:"
  sed "s/^/    /" <<<"$first"
fi
EOF

busy_pids=()
for ((i = 0; i < busy_loops; i++)); do
  (while :; do :; done) &
  busy_pids+=($!)
done
trap 'kill "${busy_pids[@]}" 2>/dev/null; cluster_stop' EXIT
echo "pmix fence soak: $steps steps per algorithm, 2 nodes x 2 ranks, $busy_loops busy loop(s)"
for algorithm in "${algorithms[@]}"; do
  cluster_job $((steps * 10 + 60)) --nodes=2 --ntasks-per-node=2 --output="$work/$algorithm.out" \
    soak.sbatch "$algorithm" "$steps"
  cat "$work/$algorithm.out"
done
