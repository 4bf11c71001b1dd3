#!/usr/bin/env bash
# Kill soak: N trials, each a 2-rank run with a checkpoint every 2 steps, killed with
# SIGKILL to all ranks or to one (mpirun then ends the job), at a random moment or at the first
# moment after it when a checkpoint file is being written (its staging file exists). After each kill it checks that checkpoints/latest loads
# (`ddptrain inspect`), that every kept checkpoint passes `inspect`, that train.resume = auto
# continues to the end, and that the final model equals an uninterrupted run's bit for bit
# (h5diff of /model and /buffers, no tolerance). Prints one line per trial and the totals; exits 1
# if any trial failed. Not a CI test: it takes minutes and its kill moments are random.
#
# Usage: share/dev/kill_soak.sh [TRIALS] [OPTION...]   (TRIALS default 20; options go to every
#        training command, e.g. --checkpoint.async=true)
# Env:   DDPTRAIN (default build/bin/ddptrain), MPIEXEC (default mpirun), SOAK_SEED (default: the
#        time; printed, so a failing sequence of kills can be replayed)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
trials=${1:-20}
extra=("${@:2}")
ddptrain=${DDPTRAIN:-$repo/build/bin/ddptrain}
mpiexec=${MPIEXEC:-mpirun}
seed=${SOAK_SEED:-$(date +%s)}
RANDOM=$seed
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'pkill -9 -f "run.dir=$work/" 2>/dev/null; rm -rf "$work"' EXIT

steps=60
# ~0.6M parameters with AdamW state: ~7 MB per checkpoint, so writes take long enough to be hit.
train_args=(train "$repo/inputs/quickstart.cfg" --model.hidden=512,512,512 --train.steps=$steps
            --checkpoint.every=2 --checkpoint.keep=3 --log.every=10 "${extra[@]}")
run() { # run RUN_DIR [OPTION...]: a 2-rank training run in the foreground
  local dir=$1
  shift
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" "${train_args[@]}" --run.dir="$dir" "$@" \
    </dev/null >"$dir.log" 2>&1
}

echo "kill soak: $trials trials, seed $seed, ${extra[*]:-no extra options}"
start=$SECONDS
run "$work/reference" || { cat "$work/reference.log"; echo "the uninterrupted run failed"; exit 1; }
reference=$work/reference/checkpoints/$(readlink "$work/reference/checkpoints/latest")
reference_s=$((SECONDS - start))
echo "uninterrupted run: ${reference_s} s, final checkpoint $(basename "$reference")"

# The pid of world rank R among mpirun's children.
rank_pid() {
  local pid
  for pid in $(pgrep -P "$1"); do
    tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$2" &&
      echo "$pid" && return 0
  done
  return 1
}

# One trial: start, kill, check, resume, compare. Prints its line; returns 1 on a failure.
trial() {
  local n=$1 dir=$work/trial_$1
  local who=$((RANDOM % 3)) when=$((RANDOM % 2))  # who: 0 all, 1 rank 0, 2 rank 1
  # A moment within the first 80% of an uninterrupted run (start-up included).
  local delay_ms=$((300 + RANDOM % (reference_s * 800 + 1)))
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" "${train_args[@]}" --run.dir="$dir" \
    </dev/null >"$dir.first.log" 2>&1 &
  local launcher=$! moment="at ${delay_ms} ms"
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  if ((when == 1)); then  # then inside a write: as soon as a staging file exists
    moment="in a write after ${delay_ms} ms"
    for _ in $(seq 1 1000); do
      compgen -G "$dir/checkpoints/.step_*.h5.tmp" >/dev/null && break
      sleep 0.01
    done
  fi
  # SIGKILL to the ranks (as a node failure): mpirun then ends the job.
  local target="all ranks" ranks=(0 1) pid
  ((who > 0)) && target="rank $((who - 1))" && ranks=($((who - 1)))
  local killed=0 rank
  for rank in "${ranks[@]}"; do
    pid=$(rank_pid "$launcher" "$rank") && kill -9 "$pid" 2>/dev/null && killed=1
  done
  ((killed)) || target="none (ended)"
  wait "$launcher" 2>/dev/null
  local first_rc=$?
  local ckpt=$dir/checkpoints problems=()
  local latest=none
  if [[ -L $ckpt/latest ]]; then
    latest=$(readlink "$ckpt/latest")
    "$ddptrain" inspect "$ckpt/latest" >/dev/null 2>&1 || problems+=("latest ($latest) does not load")
  fi
  local kept=0 file
  for file in "$ckpt"/step_*.h5; do
    [[ -e $file ]] || continue
    kept=$((kept + 1))
    "$ddptrain" inspect "$file" >/dev/null 2>&1 || problems+=("kept $(basename "$file") fails inspect")
  done
  if ! run "$dir" --train.resume=auto; then
    problems+=("resume failed: $(grep -m1 'error' "$dir.log")")
  else
    local final=$ckpt/$(readlink "$ckpt/latest")
    h5diff -q "$reference" "$final" /model /model >/dev/null 2>&1 &&
      h5diff -q "$reference" "$final" /buffers /buffers >/dev/null 2>&1 ||
      problems+=("final model differs from the uninterrupted run's")
  fi
  local resumed_at
  resumed_at=$(grep -oP 'resumed *: at step \K[0-9]+' "$dir.log" || echo "0 (fresh)")
  local status=ok
  ((${#problems[@]})) && status="FAIL: ${problems[*]}"
  printf 'trial %2d: killed %-9s %-25s (job exit %3d) latest %-16s kept %d, resumed at %-9s %s\n' \
    "$n" "$target" "$moment" "$first_rc" "$latest" "$kept" "$resumed_at" "$status"
  rm -rf "$dir" "$dir".*log
  [[ $status == ok ]]
}

failed=0
for n in $(seq 1 "$trials"); do
  trial "$n" || failed=$((failed + 1))
done
echo "kill soak: $((trials - failed)) of $trials trials passed (loadable latest, inspect, resume," \
  "bit-identical final model) in $((SECONDS - start)) s, seed $seed"
((failed == 0))
