#!/usr/bin/env bash
# Progress output (log.progress) and the end-of-run summary, as users see them:
#  - auto into a pipe (SLURM logs, ctest, `mpirun | tee`): the plain periodic lines, no \r;
#  - bar: one line redrawn in place, the periodic lines in log.txt only, evaluation and
#    checkpoint messages on clean lines above the bar, the summary on a fresh line after it;
#  - auto on a pseudo-terminal (script(1)), at 1 rank and under mpirun -np 2: the bar;
#  - the summary's lines, the memory a rank held and its peak among them.
# What a terminal shows is checked by replaying each \r as a return to the start of the line.
# Without script(1) the other checks run, then the test exits 77 (skipped).
# Usage: progress_and_summary.sh MPIEXEC DDPTRAIN DECK
set -eu
source "$(dirname "$0")/common.sh"
run=(train "$deck" --train.steps=400 --log.every=100 --data.val_fraction=0.1 --eval.every=200
     --checkpoint.every=200)

# The screen a terminal would show for the output in $1.
screen() {
  /usr/bin/python3 -c '
import sys
for raw in open(sys.argv[1], newline="").read().split("\n"):
    line = ""
    for part in raw.split("\r"):
        line = part + line[len(part):]
    print(line.rstrip())' "$1"
}

# The summary block, with the run directory $2, in the screen file $1 of a run at $3 rank(s).
check_summary() {
  grep -qx 'summary' "$1" || fail "no summary block in $1"
  grep -qx '  steps           : 400 of 400' "$1" || fail "summary: steps ($1)"
  grep -qP '^  wall time       : [0-9.]+ s$' "$1" || fail "summary: wall time ($1)"
  grep -qP '^  throughput      : \d+ samples/s \(all ranks, after 5 warm-up steps\)$' "$1" ||
    fail "summary: throughput ($1)"
  grep -qP '^  final loss      : [0-9.]+ \(mean over steps 301\.\.400\)$' "$1" ||
    fail "summary: final loss ($1)"
  grep -qP '^  best eval       : loss [0-9.]+  accuracy [0-9.]+ at step (200|400)$' "$1" ||
    fail "summary: best eval ($1)"
  grep -qx "  metrics         : $2/metrics.h5" "$1" || fail "summary: metrics ($1)"
  grep -qx "  log             : $2/log.txt" "$1" || fail "summary: log ($1)"
  grep -qx "  config          : $2/config.cfg" "$1" || fail "summary: config ($1)"
  grep -qx "  checkpoints     : $2/checkpoints (latest: step_00000400.h5)" "$1" ||
    fail "summary: checkpoints ($1)"
  grep -qP '^  checkpoint time : 2 written; training stopped [0-9.]+ s for them, writing took [0-9.]+ s \([0-9.]+ s each\)$' "$1" ||
    fail "summary: checkpoint time ($1)"
  # Where the time of a step went: every phase, none negative, adding up to the step.
  /usr/bin/python3 - "$1" <<'PY' || fail "summary: step time ($1)"
import re, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("  step time       : "))
m = re.fullmatch(r"  step time       : ([0-9.]+) ms per step: (.*) \(rank 0, steps after the "
                 r"warm-up\)\n", line)
assert m, line
parts = dict((name, float(ms)) for name, ms, _ in
             re.findall(r"([a-z+ ]+) ([0-9.]+) \((\d+)%\)(?:, |$)", m.group(2)))
names = ["forward", "backward", "comm wait", "optimizer", "data", "zero+sync", "between steps"]
assert list(parts) == names, line
assert parts["forward"] > 0 and parts["backward"] > 0 and parts["optimizer"] > 0, line
assert abs(sum(parts.values()) - float(m.group(1))) <= 0.01 * len(parts), line
PY
  # At 2 ranks, the ranks side by side: ranges that are ranges, the slowest rank named with its
  # host; at 1 rank, no such line.
  /usr/bin/python3 - "$1" "$3" "$(hostname)" <<'PY' || fail "summary: ranks ($1)"
import re, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("  ranks' steps    : ")]
if sys.argv[2] == "1":
    assert not lines, lines
    sys.exit(0)
assert len(lines) == 1, lines
m = re.fullmatch(r"  ranks' steps    : forward \+ backward ([0-9.]+)\.\.([0-9.]+) ms per step, "
                 r"slowest rank ([01]) \((.+)\); comm wait ([0-9.]+)\.\.([0-9.]+) ms\n", lines[0])
assert m, lines[0]
assert 0 < float(m.group(1)) <= float(m.group(2)), lines[0]
assert float(m.group(5)) <= float(m.group(6)), lines[0]
assert m.group(4) == sys.argv[3], f"host {m.group(4)}, expected {sys.argv[3]}"
PY
  # The state the banner expects is the state the optimizer held at the end.
  local expected held
  expected=$(grep -oP '^  optimizer       : .*, state \K[0-9.]+ \S+(?= per rank)' "$1") ||
    fail "banner: optimizer state ($1)"
  held=$(grep -oP '^  optimizer state : \K[0-9.]+ \S+(?= per rank \(every rank holds all of it\)$)' "$1") ||
    fail "summary: optimizer state ($1)"
  [[ $expected == "$held" ]] || fail "banner expects $expected of optimizer state, summary says $held"
  # Memory: the parameters and gradients (the quickstart MLP trains all of its 85,002 float32
  # values: 332 KiB each), and a peak resident set above them (at 2 ranks, some of it in
  # memory the ranks share: their gradient buckets).
  grep -qP "^  memory          : parameters 332 KiB, gradients 332 KiB per rank; peak [0-9.]+ (MiB|GiB) resident \(rank 0(; [0-9.]+ (B|KiB|MiB|GiB) of it in memory the node's ranks share)?\)$" "$1" ||
    fail "summary: memory ($1): $(grep '^  memory' "$1")"
}

# log.txt gets the four plain progress lines whatever the console shows.
check_log_txt() {
  [[ $(grep -cP '^\[[-0-9 :]+\] step +\d+/400  epoch' "$1/log.txt") == 4 ]] ||
    fail "log.txt lacks the progress lines: $(cat "$1/log.txt")"
}

# 1. auto into a pipe, 2 ranks: exactly the plain lines.
"$mpiexec" -np 2 --oversubscribe "$ddptrain" "${run[@]}" --run.dir="$work/lines" >"$work/lines.txt"
! grep -q $'\r' "$work/lines.txt" || fail "carriage returns in piped output"
[[ $(grep -cP '^step +\d+/400  epoch' "$work/lines.txt") == 4 ]] || fail "not 4 progress lines"
check_summary "$work/lines.txt" "$work/lines" 2
check_log_txt "$work/lines"

# 2. log.progress = bar, even into a file: the bar, messages above it, the summary after it.
"$ddptrain" "${run[@]}" --run.dir="$work/bar" --log.progress=bar >"$work/bar.txt"
screen "$work/bar.txt" >"$work/bar.screen"
grep -q $'\r' "$work/bar.txt" || fail "no bar drawn"
! grep -qP 'step +\d+/400  epoch' "$work/bar.txt" || fail "progress lines on the console under the bar"
grep -qP '^eval at step 200: loss' "$work/bar.screen" || fail "eval line garbled: $(cat "$work/bar.screen")"
grep -qP '^checkpoint: ' "$work/bar.screen" || fail "checkpoint line garbled"
grep -qP '^400/400 \[=+\] 100%  loss [0-9.]+ +\d+ samples/s  ETA 0:00$' "$work/bar.screen" ||
  fail "no final bar on its own line: $(cat "$work/bar.screen")"
[[ $(grep -A1 '^400/400 \[' "$work/bar.screen" | tail -1) == summary ]] ||
  fail "the summary does not follow the final bar"
check_summary "$work/bar.screen" "$work/bar" 1
check_log_txt "$work/bar"

# 3. auto on a terminal (script's pseudo-terminal, sized as a terminal emulator would size it),
# and under mpirun -np 2, which gives its ranks a pseudo-terminal of their own.
if command -v script >/dev/null; then
  # -e: script exits with the command's exit code (without it, always 0).
  script -eqc "stty cols 100; '$ddptrain' ${run[*]} --run.dir='$work/pty1'" /dev/null \
    </dev/null >"$work/pty1.txt" || fail "1 rank on a terminal exited with $?"
  script -eqc "stty cols 100; '$mpiexec' -np 2 --oversubscribe '$ddptrain' ${run[*]} \
    --run.dir='$work/pty2'" /dev/null </dev/null >"$work/pty2.txt" ||
    fail "2 ranks on a terminal exited with $?"
  for n in 1 2; do
    screen "$work/pty$n.txt" >"$work/pty$n.screen"
    grep -qP '^400/400 \[=+\] 100%' "$work/pty$n.screen" ||
      fail "no bar on a terminal at $n rank(s): $(cat "$work/pty$n.screen")"
    ! grep -qP 'step +\d+/400  epoch' "$work/pty$n.txt" || fail "progress lines under the bar"
    check_summary "$work/pty$n.screen" "$work/pty$n" "$n"
    check_log_txt "$work/pty$n"
  done
else
  # The checks above passed; without a pseudo-terminal the test is a skip, not a pass.
  echo "SKIP: script(1) not found (package bsdutils): the terminal checks did not run"
  exit 77
fi
echo "progress and summary ok"
