#!/usr/bin/env bash
# ddptrain generate stopped and continued: the finished file is the uninterrupted run's.
#  - SIGUSR1 to both ranks of a 2-rank job: the batches in flight end, exit 75, the rows done
#    kept in OUT.h5.partial/, no output; one rank's last frame then cut short and another's file
#    given a zero-filled tail (a kill, a crash); the same command on 3 ranks generates the rest;
#  - SIGKILL to one rank: the job ends; the same command on 2 ranks continues from the rows each
#    rank had synced;
#  - every dataset of both finished files equals an uninterrupted 3-rank run's, and the partial
#    folder is gone.
# Usage: generate_resume.sh MPIEXEC DDPTRAIN DECK (the deck is unused: gpt_tokens.cfg is trained).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
gpt=$repo/inputs/gpt_tokens.cfg
"$ddptrain" train "$gpt" --run.dir="$work/run" --train.steps=10 --checkpoint.every=10 \
  --eval.every=0 --train.threads=1 >"$work/train.txt" 2>&1 ||
  { cat "$work/train.txt"; fail "training exited with $?"; }
/usr/bin/python3 - "$work/prompts.h5" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(2)
lengths = rng.integers(4, 9, 1500)
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = rng.integers(0, 256, lengths.sum()).astype(np.int64)
    f["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
PY
# launch RANKS OUTPUT: exec, so that a launch in the background is mpirun itself ($! its pid).
launch() {
  exec "$mpiexec" -np "$1" --oversubscribe "$ddptrain" generate "$gpt" \
    --checkpoint "$work/run/checkpoints/latest" --input "$work/prompts.h5" --output "$2" \
    --train.threads=1 --generate.max_new_tokens=24 --generate.batch_size=1 \
    --generate.temperature=0.8
}
(launch 3 "$work/whole.h5") >"$work/whole.txt" 2>&1 || { cat "$work/whole.txt"; fail "exit $?"; }
# started PID OUTPUT: true once both ranks of mpirun PID have synced rows into OUTPUT.partial.
started() {
  local deadline=$((SECONDS + 120))
  while (($(find "$2.partial" -name 'rows.*.bin' -size +1k 2>/dev/null | wc -l) < 2)); do
    ((SECONDS < deadline)) && kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
}

launch 2 "$work/out.h5" >"$work/stopped.txt" 2>&1 &
launcher=$!
started "$launcher" "$work/out.h5" || fail "no rows synced: $(tail -3 "$work/stopped.txt")"
for rank in 0 1; do
  pid=$(rank_pid "$launcher" "$rank") || fail "no rank $rank: $(pgrep -P "$launcher" -a; tail -3 "$work/stopped.txt")"
  kill -s USR1 "$pid"
done
rc=0
wait "$launcher" || rc=$?
[[ $rc -eq 75 ]] || fail "SIGUSR1: exit $rc, not 75: $(tail -3 "$work/stopped.txt")"
grep -q "generate: stopped by SIGUSR1; the rows done are kept in .*out.h5.partial" \
  "$work/stopped.txt" || fail "no stop line: $(tail -3 "$work/stopped.txt")"
[[ ! -e $work/out.h5 ]] || fail "a stopped job wrote its output"
# What a kill or a crash can leave: one rank's last frame cut short, another's tail zero-filled.
# Those batches are generated again; the rest is kept.
files=("$work"/out.h5.partial/rows.*.bin)
((${#files[@]} == 2)) || fail "not one file per rank: ${files[*]}"
truncate -s -100 "${files[0]}"
head -c 4096 /dev/zero >>"${files[1]}"
(launch 3 "$work/out.h5") >"$work/continued.txt" 2>&1 ||
  { cat "$work/continued.txt"; fail "exit $?"; }
grep -q "generate: continuing: [0-9]* of 1500 rows were done before" "$work/continued.txt" ||
  fail "the second attempt did not continue: $(cat "$work/continued.txt")"

launch 2 "$work/killed.h5" >"$work/killed_first.txt" 2>&1 &
launcher=$!
started "$launcher" "$work/killed.h5" || fail "no rows synced: $(tail -3 "$work/killed_first.txt")"
kill -KILL "$(rank_pid "$launcher" 1)"
wait "$launcher" && fail "a job with a killed rank ended well"
[[ ! -e $work/killed.h5 ]] || fail "a killed job wrote its output"
(launch 2 "$work/killed.h5") >"$work/killed_second.txt" 2>&1 ||
  { cat "$work/killed_second.txt"; fail "exit $?"; }
grep -q "generate: continuing" "$work/killed_second.txt" || fail "no continuation after SIGKILL"

/usr/bin/python3 - "$work" <<'PY' || fail "a continued generation differs from the uninterrupted one"
import sys, h5py, numpy as np
work = sys.argv[1]
whole = h5py.File(f"{work}/whole.h5", "r")
for name in ("out", "killed"):
    f = h5py.File(f"{work}/{name}.h5", "r")
    for d in ("tokens", "offsets", "finish", "logprobs"):
        assert np.array_equal(whole[d][()], f[d][()]), f"{name}: /{d}"
print("stopped and continued, killed and continued: the uninterrupted file")
PY
[[ ! -e $work/out.h5.partial && ! -e $work/killed.h5.partial ]] || fail "a partial folder is left"
echo "generate resume checks passed"
