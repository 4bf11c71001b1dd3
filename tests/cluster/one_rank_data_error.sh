#!/usr/bin/env bash
# A data error that only one rank meets ends every rank within seconds, where no launcher saves
# us: `srun --mpi=pmix --kill-on-bad-exit=0` (checked in srun -v's option list) on the one-node
# cluster starts 2 ranks that resume from the same checkpoint path, but rank 1 runs in its own
# mount namespace where a copy with one flipped byte in its tensor data is bind-mounted over that
# path (a node with a bad file cache), so only rank 1 meets the Fletcher32 error. The step has to
# end within kEndS, not at dist.timeout_s (kTimeoutS) with rank 0 sitting in its first
# collective; srun exits 3 and stderr names the file and the dataset.
# Usage: one_rank_data_error.sh DDPTRAIN SOURCE_DIR
#
# Measured here (SLURM 22.05.8, Open MPI 4.1.4, pmix): after MPI_Abort(MPI_COMM_WORLD, 3) on
# one rank the step is cancelled within a second, the other task is killed (SIGKILL) and srun
# exits 3, the aborting task's code; the job's ExitCode field says 0:9 (the signal of the killed
# task), so the test checks srun's exit code. Without the abort (a one-rank error treated as
# collective), rank 1 printed nothing and sat in MPI_Finalize, rank 0 waited in its first
# all-reduce until dist.timeout_s, and its watchdog ended the step with exit code 5.
set -euo pipefail
ddptrain=$1
src=$2
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
readonly kEndS=20      # the step must be over this long after srun started it
readonly kTimeoutS=120 # dist.timeout_s: what a rank left waiting would sit out
deck=$src/inputs/quickstart.cfg

cluster_start one
cd "$work"
srun -N1 -n2 --mpi=pmix --kill-on-bad-exit=1 "$ddptrain" train "$deck" --train.steps=10 \
  --checkpoint.every=10 --log.every=5 --run.dir="$work/run" >"$work/train.txt" 2>&1 ||
  fail "training the checkpoint: $(tail -n 3 "$work/train.txt")"
good=$work/run/checkpoints/step_00000010.h5
damaged=$work/damaged.h5
/usr/bin/python3 - "$good" "$damaged" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) * 2 // 3] ^= 0x5A  # inside the tensor data (metadata sits at both ends)
open(sys.argv[2], "wb").write(data)
PY
"$ddptrain" inspect "$good" >/dev/null || fail "inspect of the good checkpoint"
rc=0
"$ddptrain" inspect "$damaged" >/dev/null 2>&1 || rc=$?
((rc == 3)) || fail "inspect of the damaged copy: exit code $rc, expected 3"

# Task 1 sees the damaged copy at the good file's path, task 0 the good file.
cat >"$work/rank.sh" <<'EOF'
#!/bin/bash
# rank.sh GOOD DAMAGED COMMAND...: task 1 runs COMMAND with DAMAGED mounted over GOOD.
good=$1 damaged=$2
shift 2
if [[ $SLURM_PROCID == 1 ]]; then
  exec unshare -m sh -c 'mount --bind "$2" "$1" || { echo "rank.sh: bind mount failed" >&2; \
    exit 99; }; shift 2; exec "$@"' sh "$good" "$damaged" "$@"
fi
exec "$@"
EOF
chmod +x "$work/rank.sh"
# shellcheck disable=SC2016 # expanded by the task's sh
seen=$(srun -N1 -n2 --mpi=none "$work/rank.sh" "$good" "$damaged" \
  sh -c 'cmp -s "$0" "$1" && echo "$SLURM_PROCID:damaged" || echo "$SLURM_PROCID:good"' \
  "$good" "$damaged" | sort | tr '\n' ' ') || true
[[ $seen == "0:good 1:damaged " ]] || fail "what the tasks see at the checkpoint's path: $seen"

rc=0
start=${EPOCHREALTIME/./}
srun -v -N1 -n2 --mpi=pmix --kill-on-bad-exit=0 "$work/rank.sh" "$good" "$damaged" \
  "$ddptrain" train "$deck" --train.steps=20 --log.every=5 --run.dir="$work/resumed" \
  --train.resume="$good" --dist.timeout_s=$kTimeoutS >"$work/out.txt" 2>"$work/err.txt" &
srun_pid=$!
while kill -0 "$srun_pid" 2>/dev/null && ((${EPOCHREALTIME/./} - start < kEndS * 1000000)); do
  sleep 0.1
done
if kill -0 "$srun_pid" 2>/dev/null; then
  echo "--- the ranks' stderr so far"
  grep -v '^srun: ' "$work/err.txt" || true
  echo "--- the step's processes (LOCALID = task)"
  SLURMD_NODENAME=n1 scontrol listpids || true
  fail "the step still runs after $kEndS s: a rank waits for one that failed" \
    "(dist.timeout_s = $kTimeoutS s)"
fi
wait "$srun_pid" || rc=$?
elapsed=$(((${EPOCHREALTIME/./} - start) / 1000))
grep -v '^srun: ' "$work/err.txt" || true # the ranks' stderr, without srun -v's chatter
echo "srun exit code $rc after $elapsed ms"

grep -Eq '^srun: kill-on-bad-exit +: 0$' "$work/err.txt" ||
  fail "the step did not run with kill-on-bad-exit off: $(grep kill-on-bad-exit "$work/err.txt")"
! grep -q "rank.sh: bind mount failed" "$work/err.txt" || fail "task 1's bind mount failed"
((rc == 3)) || fail "srun exit code $rc, expected 3 (a data error)"
grep -F "checkpoint '$good'" "$work/err.txt" | grep -Eq "dataset '/[^']+'.*Fletcher32" ||
  fail "no line naming the checkpoint, the dataset and the Fletcher32 checksum"
! grep -q "collective timed out" "$work/err.txt" || fail "a rank sat until dist.timeout_s"
echo "PASS: a data error on rank 1 only ended the step in $elapsed ms with exit code 3"
