#!/usr/bin/env bash
# The modulefile on a two-node SLURM: after `cmake --install`, a batch job on both emulated nodes
# runs `module use PREFIX/share/modulefiles; module load ddptrain` (and `module use modules` of the
# source tree with DDPTRAIN_PREFIX=PREFIX) on each node,
# and each finds the installed ddptrain on PATH and runs it; `ddptrain info`, launched by srun on
# both nodes from the module's environment, sees 2 ranks on 2 nodes. The module sets
# SLURM_PMIX_FENCE=ring (slurm/README.md, "MPI launch") over the user's own value, which
# `module unload` gives back.
# Usage: lmod_two_nodes.sh DDPTRAIN SOURCE_DIR BUILD_DIR CMAKE
set -euo pipefail
ddptrain=$1
src=$2
build=$3
cmake=$4
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kLmodInit=/usr/share/lmod/lmod/init/bash

[[ -r $kLmodInit ]] || skip "Lmod not installed ($kLmodInit missing)"
cluster_start two
# The modulefile is named after the version: there has to be one for the version built.
version=$("$ddptrain" --version | sed -n 's/^ddptrain //p')
modulefile=ddptrain/$version.lua
[[ -f $src/modules/$modulefile ]] || fail "no modules/$modulefile for ddptrain $version"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.txt" ||
  fail "cmake --install: $(tail -n 3 "$work/install.txt")"
modulefiles=$prefix/share/modulefiles
cmp -s "$src/modules/$modulefile" "$modulefiles/$modulefile" ||
  fail "cmake --install did not copy modules/$modulefile to $modulefiles/"

# The job must find ddptrain through the module alone, not through what the test was given.
unset DDPTRAIN_BIN DDPTRAIN_PREFIX SLURM_PMIX_FENCE
cat >"$work/job.sh" <<EOF
#!/bin/bash
set -eu
export SLURM_PMIX_FENCE=tree # the user's own
report='echo "node \$(hostname) \$(command -v ddptrain) \$(ddptrain --version) root=\$DDPTRAIN_ROOT fence=\$SLURM_PMIX_FENCE"'
# The installed modulefile finds its prefix from where it lies; the source tree's modules/ takes
# it from DDPTRAIN_PREFIX.
installed="source $kLmodInit && module use $modulefiles && module load ddptrain && \$report"
source_tree="source $kLmodInit && module use $src/modules && DDPTRAIN_PREFIX=$prefix &&
  export DDPTRAIN_PREFIX && module load ddptrain && \$report | sed 's/^node/source-tree node/'"
# One step per node: ddptrain prints from MPI rank 0 only, even --version.
for node in n1 n2; do
  srun --nodelist=\$node --nodes=1 --ntasks=1 bash -c "\$installed"
  srun --nodelist=\$node --nodes=1 --ntasks=1 bash -c "\$source_tree"
done
source $kLmodInit
module use $modulefiles
module load ddptrain
srun --mpi=pmix --nodes=2 --ntasks-per-node=1 ddptrain info
module unload ddptrain
echo "after unload: fence=\${SLURM_PMIX_FENCE-unset}"
EOF
cd "$work"
cluster_job 60 --nodes=2 --ntasks-per-node=1 --output="$work/job.out" "$work/job.sh"
cat "$work/job.out"
[[ $JOB_STATE == COMPLETED ]] || fail "job $JOB_ID ended $JOB_STATE"

expected="$prefix/bin/ddptrain ddptrain $version root=$prefix fence=ring"
for node in n1 n2; do
  grep -qxF "node $node $expected" "$work/job.out" || fail "node $node did not report '$expected'"
  grep -qxF "source-tree node $node $expected" "$work/job.out" ||
    fail "node $node, module use modules/ with DDPTRAIN_PREFIX, did not report '$expected'"
done
grep -Eq "ranks +: 2 on 2 node\(s\), 1 per node" "$work/job.out" ||
  fail "ddptrain info under srun -N2"
grep -qxF "after unload: fence=tree" "$work/job.out" ||
  fail "module unload ddptrain did not give SLURM_PMIX_FENCE its value from before the load back"
echo "PASS: module load ddptrain works on n1 and n2"
