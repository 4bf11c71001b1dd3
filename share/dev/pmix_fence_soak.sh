#!/usr/bin/env bash
# PMIx fence soak: how often an Open MPI rank crashes inside MPI_Init under srun across two nodes,
# for each of SLURM's fence algorithms (SLURM_PMIX_FENCE). On the two emulated nodes of
# tests/cluster (2 ranks each), one job runs STEPS srun steps of a 15-line MPI program per
# algorithm: MPI_Init_thread, then at once an MPI_Allreduce, the first message a rank can receive
# while a slower one is still in MPI_Init. Prints the failed steps per algorithm and the first
# crash line of each. Not a CI test: minutes, and the failures are a matter of chance.
#
# Why (slurm/README.md, "MPI launch"): Open MPI 5.0.7 under SLURM 24.11 (Debian 13), 2026-11-27,
# 300 steps each with two busy loops beside them: mixed (SLURM's default: the data fence by a
# ring, the barrier by a tree) 9 failed, tree 100, ring 0; every failure a signal 11 at address
# 0xe0 in mca_pml_ob1_recv_frag_callback_match, inside MPI_Init's data fence, before
# MPI_COMM_WORLD exists in the receiving rank. That is the crash of the 2026-11-27 CI
# (slurm_cpu_job_two_nodes, Debian 13 leg). The scripts in slurm/ therefore ask for the ring.
#
# Usage: share/dev/pmix_fence_soak.sh [STEPS] [ALGORITHM...]   (default 100; mixed tree ring)
# Env:   SOAK_BUSY_LOOPS (default: the cores, `nproc --all`): busy loops run beside the steps
#        (the CI crash came under load; without it, 0 of 20 steps and 0 of 30 jobs failed). 0: none.
# Needs root and SLURM (share/dev/setup.sh); on the Debian 13 stack:
#   bash share/dev/ci/debian13.sh cpu bash share/dev/pmix_fence_soak.sh 300
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
  [[ $failed -gt 1 ]] || first=$(grep -m 1 -E "signal|error" "step-$1-$k.out")
done
echo "SLURM_PMIX_FENCE=$1: $failed of $2 steps failed${first:+; first: $first}"
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
  tail -n 1 "$work/$algorithm.out"
done
