#!/usr/bin/env bash
# A generation job stopped by SLURM continues where it stopped: `sbatch train_cpu.sbatch generate
# ...` (2 ranks) gets SIGUSR1 from `scancel --signal=USR1` once both ranks have kept rows, ddptrain
# exits 75 with the rows done in OUT.h5.partial/, the script requeues the job, the requeued job
# (the same command) continues from those rows and writes OUT.h5; every dataset equals an
# uninterrupted 2-rank run's (sampled tokens, so a row generated twice would show).
# Usage: generate_requeue.sh DDPTRAIN SOURCE_DIR
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kStopped=75
gpt=$src/inputs/gpt_tokens.cfg

cluster_start one
cd "$work"
export DDPTRAIN_BIN=$ddptrain
"$ddptrain" train "$gpt" --run.dir="$work/run" --train.steps=10 --checkpoint.every=10 \
  --eval.every=0 --train.threads=1 >"$work/train.txt" 2>&1 || { cat "$work/train.txt"; fail "train"; }
# prompts ROWS: ROWS prompts of 4 to 8 tokens (about 5 s of generation per 2000 rows at 2 ranks).
prompts() {
  /usr/bin/python3 - "$work/prompts.h5" "$1" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(3)
lengths = rng.integers(4, 9, int(sys.argv[2]))
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = rng.integers(0, 256, lengths.sum()).astype(np.int64)
    f["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
PY
}
command=(generate "$gpt" --checkpoint "$work/run/checkpoints/latest" --input "$work/prompts.h5"
  --train.threads=1 --generate.max_new_tokens=24 --generate.batch_size=1
  --generate.temperature=0.8)

# The signal goes once both ranks have synced rows; a job that finished first is run again with
# twice the prompts (the test passes only with a job that was stopped and requeued).
rows=3000
for attempt in 1 2 3; do
  prompts "$rows"
  rm -rf "$work/out.h5" "$work/out.h5.partial"
  cluster_submit --nodes=1 --ntasks-per-node=2 --output="$work/job-%j.out" \
    "$src/slurm/train_cpu.sbatch" "${command[@]}" --output "$work/out.h5"
  deadline=$((SECONDS + 120))
  while (($(find "$work/out.h5.partial" -name 'rows.*.bin' -size +1k 2>/dev/null | wc -l) < 2)); do
    ((SECONDS < deadline)) || fail "no rows kept within 120 s: $(cat "$work/job-$JOB_ID.out")"
    [[ ! -e $work/out.h5 ]] || break
    sleep 0.1
  done
  scancel --signal=USR1 "$JOB_ID" || true # the job may have ended
  cluster_wait 300
  out=$work/job-$JOB_ID.out
  cat "$out"
  grep -q "generate: stopped by SIGUSR1" "$out" || [[ $attempt -eq 3 ]] || {
    rows=$((2 * rows))
    echo "job $JOB_ID ended before the signal; again with $rows prompts"
    continue
  }
  break
done

[[ $JOB_STATE == COMPLETED ]] || fail "job $JOB_ID ended $JOB_STATE"
[[ $(job_field "$JOB_ID" ExitCode) == 0:0 ]] || fail "exit code $(job_field "$JOB_ID" ExitCode)"
grep -q "generate: stopped by SIGUSR1" "$out" || fail "the job was not stopped by the signal"
grep -q "(exit $kStopped): requeueing job $JOB_ID" "$out" ||
  fail "the script did not requeue on exit $kStopped"
(($(job_field "$JOB_ID" Restarts) >= 1)) || fail "Restarts=$(job_field "$JOB_ID" Restarts)"
grep -q "generate: continuing: [0-9]* of $rows rows were done before" "$out" ||
  fail "the requeued job did not continue from the kept rows"
[[ -e $work/out.h5 && ! -e $work/out.h5.partial ]] || fail "no output, or the partial folder is left"

mpirun -np 2 --oversubscribe "$ddptrain" "${command[@]}" --output "$work/whole.h5" \
  >"$work/whole.txt" 2>&1 || { cat "$work/whole.txt"; fail "uninterrupted run"; }
/usr/bin/python3 - "$work/out.h5" "$work/whole.h5" <<'PY' ||
import sys, h5py, numpy as np
got, whole = (h5py.File(p, "r") for p in sys.argv[1:3])
for d in ("tokens", "offsets", "finish", "logprobs"):
    assert np.array_equal(got[d][()], whole[d][()]), f"/{d} differs"
PY
  fail "the requeued generation differs from the uninterrupted one"
echo "PASS: generation stopped by SIGUSR1, requeued, continued, equal to the uninterrupted run"
