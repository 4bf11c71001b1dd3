#!/usr/bin/env bash
# Training throughput of the scaling MLP at 1 and 2 ranks (one thread per rank) for ddptrain and,
# in the same run, for PyTorch DDP with gloo on the same model (the anchor), and the machine's
# ceiling for 2 ranks: two independent 1-rank ddptrain runs side by side (summed), which share
# the cores and memory as 2 ranks do but never talk. Also ddptrain at 2 ranks with
# ddp.shared_memory = false: the gradients summed by MPI_Allreduce instead of in node-shared memory;
# and with ddp.zero = 1 (ZeRO-1, on one node: the gradients reduce-scattered in shared memory, one
# shared copy of the parameters, each rank updating its half).
# PyTorch runs with the malloc settings ddptrain gives itself (pytorch_malloc.sh says why).
# Prints samples/s and scaling efficiency = throughput(2) / (2 x throughput(1)). Not a test: it
# prints figures.
# These machines are noisy: the configurations are run in turn, REPEATS times, and each figure is
# the median of its repeats; a repeat's 1-rank figure is the mean of a run at its start and one
# at its end (below).
# Usage: [BIND=core|none] share/dev/bench/scaling_mlp.sh [STEPS] [REPEATS]   (build first:
# share/dev/setup.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
steps=${1:-300}
repeats=${2:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each rank bound to a core, both implementations: mpirun's own default at 2 ranks or fewer, which
# the launch of the first scaling figures used, and what srun --cpu-bind=cores does (slurm/). A
# rank's threads (compute, communication, prefetch) then share its core instead of moving between
# cores. BIND=none runs them unbound (this script's earlier launch).
bind=${BIND:-core}
launch=(mpirun --oversubscribe --bind-to "$bind" -np)
# shellcheck source=share/dev/bench/pytorch_malloc.sh
source "$repo/share/dev/bench/pytorch_malloc.sh"

ddptrain_rate() {  # RANKS [NAME [OPTION...]] -> global samples/s (steady state, after warm-up)
  local ranks=$1 name=${2:-$1}
  shift $(($# < 2 ? $# : 2))
  "${pin[@]}" "${launch[@]}" "$ranks" "$ddptrain" train "$repo/share/dev/bench/mlp_scaling.cfg" \
    --train.steps="$steps" --run.dir="$tmp/run$name" "$@" >"$tmp/ddptrain$name.txt"
  grep -oP '^  throughput +: \K[0-9.]+(?= samples/s)' "$tmp/ddptrain$name.txt"
}
pin=()  # a command before mpirun: the ceiling's runs only
# CPU NAME -> samples/s of a 1-rank run on that CPU alone. ddptrain_rate sees these locals (bash
# scopes variables dynamically).
pinned_rate() {
  local -a pin=(taskset -c "$1") launch=(mpirun --oversubscribe --bind-to none -np)
  ddptrain_rate 1 "$2"
}
# Two independent 1-rank runs at once -> "SUM A B": their summed samples/s, and each run's (A on
# CPU 0, B on CPU 1 when bound). Each side is printed because the cores are not equally fast: on
# the 2-core VM CPU 1 has run a 1-rank job 1.2-1.3x faster than CPU 0, where mpirun binds the 1-rank
# runs, and ranks in step go at the slower core's pace.
ceiling_rate() {
  if [[ $bind == none ]]; then
    ddptrain_rate 1 side_a >"$tmp/rate_a" &
    ddptrain_rate 1 side_b >"$tmp/rate_b" &
  else  # each on a core of its own, CPUs 0 and 1 (two bound mpiruns would both take the first)
    pinned_rate 0 side_a >"$tmp/rate_a" &
    pinned_rate 1 side_b >"$tmp/rate_b" &
  fi
  wait
  cat "$tmp/rate_a" "$tmp/rate_b" | awk '{ sum += $1; side[NR] = $1 } END { print sum, side[1], side[2] }'
}
# Torch 1.13 with gloo hangs now and then in a rank's exit after printing its result (once in 3 of
# 5 repeats at 2 ranks): the run is bounded, and its result line counts if
# it was printed. The bound kills mpirun, whose Python ranks then live on, holding the gloo
# store's port: the next run could not bind it ("Address already in use") and ended the whole
# script. So the stragglers are stopped, and each run has a port of its own.
pytorch_rate() {  # RANKS; called in repeat $r
  local port=$((29533 + 10 * r + $1))
  timeout -k 5 $((steps / 5 + 60)) "${launch[@]}" "$1" "${pytorch_malloc[@]}" /usr/bin/python3 \
    "$repo/share/dev/bench/pytorch_ddp_mlp.py" --steps "$steps" --threads 1 --batch 64 \
    --port "$port" >"$tmp/pytorch$1.txt" ||
    echo "pytorch_ddp at $1 rank(s): exit $? (result taken if printed)" >&2
  pkill -f -- "pytorch_ddp_mlp.py .*--port $port\$" || true
  grep -oP 'samples_per_s=\K[0-9.]+' "$tmp/pytorch$1.txt"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The machine's speed drifts within a repeat too (once the 1-rank figure rose from 5906 to 8100
# samples/s over five repeats in 10 minutes), and every configuration runs at its own place in
# the repeat. So the 1-rank ddptrain run opens and closes each repeat, and the 2-rank runs, the
# PyTorch runs and the ceiling of that repeat are compared with the mean of the two (D1): a
# steady drift over the repeat cancels, where one run at the start would have favoured whichever
# side ran when the machine was faster.
declare -a D1 D1_FIRST D1_LAST D2 M2 Z2 P1 P2 C2 CA CB
for ((r = 1; r <= repeats; ++r)); do
  D1_FIRST+=("$(ddptrain_rate 1)"); D2+=("$(ddptrain_rate 2)")
  M2+=("$(ddptrain_rate 2 mpi_allreduce --ddp.shared_memory=false)")
  Z2+=("$(ddptrain_rate 2 zero1 --ddp.zero=1)")
  P1+=("$(pytorch_rate 1)"); P2+=("$(pytorch_rate 2)")
  read -r sum a b < <(ceiling_rate)
  C2+=("$sum"); CA+=("$a"); CB+=("$b")
  D1_LAST+=("$(ddptrain_rate 1)")
  D1+=("$(awk -v x="${D1_FIRST[-1]}" -v y="${D1_LAST[-1]}" 'BEGIN { printf "%.0f", (x + y) / 2 }')")
  echo "repeat $r: ddptrain ${D1[-1]} (${D1_FIRST[-1]} first, ${D1_LAST[-1]} last) / ${D2[-1]} (MPI_Allreduce: ${M2[-1]}, ZeRO-1: ${Z2[-1]}), pytorch_ddp ${P1[-1]} / ${P2[-1]} samples/s (1 / 2 ranks); ceiling ${C2[-1]} = ${CA[-1]} + ${CB[-1]} (2 x 1 rank side by side)"
done
d1=$(median "${D1[@]}"); d2=$(median "${D2[@]}"); m2=$(median "${M2[@]}"); z2=$(median "${Z2[@]}")
p1=$(median "${P1[@]}"); p2=$(median "${P2[@]}")
c2=$(median "${C2[@]}")
# range DIGITS VALUE...: "min..max" with DIGITS decimals.
range() {
  local digits=$1
  shift
  printf '%s\n' "$@" | sort -g |
    awk -v d="$digits" 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.*f..%.*f", d, lo, d, hi }'
}
printf '\nMLP 256-1024-1024-1024-10, AdamW, batch 64/rank, 1 thread/rank, %s steps, median of %s, %s cores, mpirun --bind-to %s\n' \
  "$steps" "$repeats" "$(nproc --all)" "$bind"
echo "ddptrain's 1 rank: per repeat, the mean of the runs that open and close it"
printf '%-12s %14s %14s %12s\n' implementation "1 rank (s/s)" "2 ranks (s/s)" efficiency
for impl in ddptrain ddptrain_mpi ddptrain_zero1 pytorch_ddp; do
  case $impl in
    ddptrain) a=$d1 b=$d2 ;;
    ddptrain_mpi) a=$d1 b=$m2 ;;  # ddp.shared_memory = false at 2 ranks
    ddptrain_zero1) a=$d1 b=$z2 ;;  # ddp.zero = 1 at 2 ranks
    *) a=$p1 b=$p2 ;;
  esac
  awk -v i="$impl" -v a="$a" -v b="$b" 'BEGIN { printf "%-12s %14.0f %14.0f %12.3f\n", i, a, b, b / (2 * a) }'
done
awk -v d="$d1" -v p="$p1" 'BEGIN { printf "ddptrain / pytorch_ddp at 1 rank: %.2fx\n", d / p }'
awk -v d="$d2" -v p="$p2" 'BEGIN { printf "ddptrain / pytorch_ddp at 2 ranks: %.2fx\n", d / p }'
awk -v c="$c2" -v a="$d1" -v d="$d2" 'BEGIN {
  printf "ceiling, two 1-rank ddptrain runs side by side: %.0f samples/s (%.3f x 2 x 1 rank); ddptrain at 2 ranks reaches %.3f of it\n", c, c / (2 * a), d / c }'
if [[ $bind == none ]]; then sides="unbound"; else sides="CPU 0 and CPU 1 (mpirun binds the 1-rank runs to CPU 0)"; fi
echo "the ceiling's two runs, $sides: median $(median "${CA[@]}") ($(range 0 "${CA[@]}")) and $(median "${CB[@]}") ($(range 0 "${CB[@]}")) samples/s"
# The bound at 2 ranks with ddp.shared_memory = false: each rank's cores are busy computing, so
# MPI_Allreduce of the gradients (9.05 MiB of fp32 for this MLP's 2,372,618 parameters) cannot
# hide behind compute and adds its own time to the ceiling's step. Timed here with
# `ddptrain bench comm` alone (MPI_Allreduce; ddp.shared_memory = false leaves out its second
# table, the sums in node-shared memory).
allreduce_us=$("${launch[@]}" 2 "$ddptrain" bench comm --min-bytes 9490472 --max-bytes 9490472 \
  --ops all_reduce --iters 50 --ddp.shared_memory=false | awk '$1 == "all_reduce" { print $5 }')
awk -v c="$c2" -v d="$m2" -v a="$allreduce_us" 'BEGIN {
  step = 2 * 64 / c * 1e3; bound = 2 * 64 / ((step + a / 1e3) / 1e3)  # ms; samples/s
  printf "MPI_Allreduce of the gradients alone (bench comm, 2 ranks): %.2f ms; ceiling step %.2f ms + that = %.0f samples/s at most without overlap (%.3f of the ceiling); ddptrain with ddp.shared_memory = false reaches %.3f of that bound\n", a / 1e3, step, bound, bound / c, d / bound }'
# Paired: each repeat's ddptrain against the PyTorch run next to it.
ratios() { local -n a=$1 b=$2; local i; for i in "${!a[@]}"; do awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN { printf "%.3f\n", x / y }'; done; }
mapfile -t R1 < <(ratios D1 P1)
mapfile -t R2 < <(ratios D2 P2)
echo "paired ratios ddptrain / pytorch_ddp: 1 rank median $(median "${R1[@]}") ($(range 2 "${R1[@]}")), 2 ranks median $(median "${R2[@]}") ($(range 2 "${R2[@]}"))"
# Paired efficiency: each repeat's 2-rank run against the 1-rank run of the same repeat (the
# machine's speed drifts between repeats).
efficiencies() { local -n a=$1 b=$2; local i; for i in "${!a[@]}"; do awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN { printf "%.3f\n", x / (2 * y) }'; done; }
for pair in D2:ddptrain Z2:ddptrain_zero1 C2:ceiling; do
  mapfile -t E < <(efficiencies "${pair%%:*}" D1)
  echo "paired efficiency ${pair#*:}: median $(median "${E[@]}") ($(range 3 "${E[@]}"))"
done
echo "spread (min..max of the repeats): ddptrain $(range 0 "${D1_FIRST[@]}" "${D1_LAST[@]}") / $(range 0 "${D2[@]}") (MPI_Allreduce: $(range 0 "${M2[@]}"), ZeRO-1: $(range 0 "${Z2[@]}")), pytorch_ddp $(range 0 "${P1[@]}") / $(range 0 "${P2[@]}"), ceiling $(range 0 "${C2[@]}")"
