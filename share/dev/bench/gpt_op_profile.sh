#!/usr/bin/env bash
# Where a training step of the GPT goes, operation by operation, in ddptrain (the built-in GPT,
# build/bin/ddptrain-bench gpt-ops) and in PyTorch eager (the same GPT in Python,
# pytorch_gpt_ops.py): gpt_ddp.sh's model and batch, one rank, THREADS threads (default 1). Each
# side prints its ms per step without the profiler, then one table gives each operation's self
# time per step on both sides. Not a test: it prints figures. Build first (share/dev/setup.sh).
# Usage: share/dev/bench/gpt_op_profile.sh [STEPS] [ROWS]   (defaults 20 and 25)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bench=${DDPTRAIN_BENCH:-$repo/build/bin/ddptrain-bench}
steps=${1:-20}
rows=${2:-25}
threads=${THREADS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
OMP_NUM_THREADS=$threads "$bench" gpt-ops "$steps" "$tmp/ddptrain.json"
OMP_NUM_THREADS=$threads /usr/bin/python3 "$repo/share/dev/bench/pytorch_gpt_ops.py" \
  --steps "$steps" --threads "$threads" --trace "$tmp/pytorch.json"
/usr/bin/python3 "$repo/share/dev/bench/op_profile_table.py" "$steps" ddptrain "$tmp/ddptrain.json" \
  pytorch "$tmp/pytorch.json" "$rows"
