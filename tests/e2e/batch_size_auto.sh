#!/usr/bin/env bash
# train.batch_size = auto, run on CPUs through its test hook: DDPTRAIN_TEST_BATCH_LIMIT makes a
# trial step of more samples fail as a full GPU would (c10::OutOfMemoryError), here a different
# limit per rank (13 on rank 0, 11 on rank 1).
#  - the ranks agree on the smallest answer: rank 0's banner says 11, found by trials;
#  - the trials leave no trace: a GPT with dropout (the random generator) and a CNN with batch
#    norm (its running statistics) train, bit for bit, as the same deck with batch_size = 11;
#  - not even one sample fitting is exit code 6 with one error line;
#  - `eval` cannot use auto's batch for its own: exit 2 naming eval.batch_size.
# (A CPU run without the hook is refused: bad_input.sh. The real GPU: gpu_training.sh.)
# Usage: batch_size_auto.sh MPIEXEC DDPTRAIN DECK
set -uo pipefail
source "$(dirname "$0")/common.sh"

gpt=(--data.type=synthetic_tokens --data.vocab=32 --data.block=16 --data.samples=512
     --model.type=gpt --model.n_layer=1 --model.n_embd=32 --model.n_head=2 --model.dropout=0.2)
cnn=(--data.type=synthetic_images --data.samples=512 --data.channels=2 --data.image_size=8
     --model.type=cnn --model.channels=4,8)
# train NAME LIMIT0 LIMIT1 OPTION...: two ranks, rank r with DDPTRAIN_TEST_BATCH_LIMIT = LIMITr
# (empty: unset); the log in $work/NAME.txt.
train() {
  local name=$1 limit0=$2 limit1=$3
  shift 3
  "$mpiexec" -np 2 --oversubscribe --bind-to none bash -c '
    limits=("$1" "$2")
    limit=${limits[$OMPI_COMM_WORLD_RANK]}
    shift 2
    if [[ -n $limit ]]; then export DDPTRAIN_TEST_BATCH_LIMIT=$limit; fi
    exec "$@"' limits "$limit0" "$limit1" "$ddptrain" train "$deck" --train.steps=12 \
    --log.every=4 --checkpoint.every=12 --log.progress=lines --run.dir="$work/$name" "$@" \
    >"$work/$name.txt" 2>&1
}
trained() { train "$@" || { cat "$work/$1.txt"; fail "run $1"; }; }

for model in gpt cnn; do
  declare -n options=$model
  trained "${model}_auto" 13 11 "${options[@]}" --train.batch_size=auto
  trained "${model}_fixed" "" "" "${options[@]}" --train.batch_size=11
  grep -q "train.batch_size = auto: 11 (tried 1 2 4 8 16x 12x 10 11; x: did not fit) per rank" \
    "$work/${model}_auto.txt" || { cat "$work/${model}_auto.txt"; fail "$model: no agreed 11"; }
  grep -q "batch *: 11 per rank (auto" "$work/${model}_auto.txt" ||
    fail "$model: the banner does not give the batch found"
  /usr/bin/python3 - "$work" "$model" <<'PY' || fail "$model: the trial steps changed the run"
import sys, h5py, numpy as np
work, model = sys.argv[1:]
def load(name):
    with h5py.File(f"{work}/{name}/metrics.h5", "r") as f:
        loss = f["train/loss"][:]
    with h5py.File(f"{work}/{name}/checkpoints/step_00000012.h5", "r") as c:
        state = {f"{g}/{k}": c[g][k][()] for g in ("model", "buffers") if g in c for k in c[g]}
    return loss, state
auto_loss, auto_state = load(f"{model}_auto")
fixed_loss, fixed_state = load(f"{model}_fixed")
assert np.array_equal(auto_loss, fixed_loss), f"losses {auto_loss} against {fixed_loss}"
assert auto_state.keys() == fixed_state.keys()
for k in auto_state:
    assert np.array_equal(auto_state[k], fixed_state[k]), f"{k} differs"
buffers = sum(k.startswith("buffers/") for k in auto_state)
assert model != "cnn" or buffers > 0, "the CNN's checkpoint has no batch-norm buffers"
print(f"ok: {model}, {len(auto_loss)} losses and {len(auto_state)} tensors ({buffers} buffers) identical")
PY
  unset -n options
done

train nothing_fits 0 5 --train.batch_size=auto
rc=$?
message=$(grep "ddptrain: error:" "$work/nothing_fits.txt")
[[ $rc -eq 6 ]] || { cat "$work/nothing_fits.txt"; fail "not even 1 fitting: exit code $rc, not 6"; }
[[ $(grep -c "ddptrain: error:" <<<"$message") -eq 1 ]] || fail "not one error line: $message"
expect_message "not even 1 sample per rank fits in GPU memory"
[[ ! -e $work/nothing_fits ]] || fail "run.dir written although nothing fitted"

printf '[train]\nbatch_size = auto\n' >"$work/auto.cfg"
message=$("$ddptrain" eval "$work/auto.cfg" \
  --checkpoint "$work/gpt_fixed/checkpoints/step_00000012.h5" "${gpt[@]}" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "eval with auto's batch: exit code $rc, not 2: $message"
expect_message "eval.batch_size"
echo "ok: batch_size = auto agreed, traceless, and refused where it cannot work"
