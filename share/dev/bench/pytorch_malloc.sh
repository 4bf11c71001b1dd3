# shellcheck shell=bash
# Sourced by the benchmarks that run a PyTorch anchor: `pytorch_malloc`, mpirun flags that give the
# anchor's processes the malloc settings ddptrain gives itself (src/runtime/process_tuning.cpp: no
# mmapped blocks, one arena, freed memory kept up to 1 GiB).
#
# Why: with glibc's defaults every large tensor PyTorch frees (AdamW's temporaries, gradients set
# to None) goes back to the kernel, and the next step faults its pages in again. On the 2-core VM,
# which hands freed pages back to its host, that made the scaling MLP's PyTorch run 4x slower at
# 1 rank (100 steps: 946-1036 samples/s with the defaults, 4330 with glibc's mmap and
# trim thresholds raised; 3647-4380 with these settings in scaling_mlp.sh 300 5), and the anchor
# measured the VM's page faults instead of PyTorch's training.
# shellcheck disable=SC2034  # used by the script that sources this file
pytorch_malloc=(-x MALLOC_MMAP_MAX_=0 -x MALLOC_ARENA_MAX=1 -x MALLOC_TRIM_THRESHOLD_=1073741824)
