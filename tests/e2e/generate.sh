#!/usr/bin/env bash
# ddptrain generate with the built-in GPT (a short run of inputs/gpt_tokens.cfg):
#  - greedy tokens, /finish and log-probabilities as PyTorch's with the checkpoint's weights
#    (generate_reference.py) on 60 prompts of 1 to 26 tokens (some fill the context);
#  - the files of 1, 2 and 3 ranks identical in every dataset, greedy and sampled (temperature
#    0.8, top_k 40, top_p 0.95): draws keyed by (seed, row, position), batches from the prompts
#    (of mixed lengths, left-padded);
#  - batches handed out as ranks free up: a slow rank makes few, the file the same;
#  - ddp.zero = 3 at 3 ranks (each rank a third of the weights, every block gathered in lockstep,
#    the whole window each token): the same tokens and /finish, log-probabilities within 1e-5;
#  - generate.batch_size = auto: the trials (a test's memory limit of 3 rows, on the CPU) settle on
#    3, and the file is that of batch_size = 3; refused on the CPU without it, and with ZeRO-3;
#  - generate.stop ends a row at its stop token (finish 1), the token kept;
#  - make-data prompts --from-text: one prompt a line, bytes as ids;
#  - bad input: one line, the exit code, nothing under the output's name.
# Usage: generate.sh MPIEXEC DDPTRAIN DECK (the deck is unused: gpt_tokens.cfg is trained).
# DDPTRAIN_PYTHON: a Python with torch and h5py (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
gpt=$repo/inputs/gpt_tokens.cfg
"$ddptrain" train "$gpt" --run.dir="$work/run" --train.steps=30 --checkpoint.every=30 \
  --eval.every=0 --train.threads=1 >"$work/train.txt" 2>&1 ||
  { cat "$work/train.txt"; fail "training exited with $?"; }
checkpoint=$work/run/checkpoints/step_00000030.h5
"$python" - "$work/prompts.h5" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(5)
lengths = rng.integers(1, 27, 60)
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = rng.integers(0, 256, lengths.sum()).astype(np.uint16)
    f["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
PY
generate() {  # NAME RANKS [OPTION...]
  local name=$1 ranks=$2
  shift 2
  "$mpiexec" -np "$ranks" --oversubscribe "$ddptrain" generate "$gpt" --checkpoint "$checkpoint" \
    --input "$work/prompts.h5" --output "$work/$name.h5" --train.threads=1 \
    --generate.max_new_tokens=12 --generate.batch_size=4 "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "generate $name exited with $?"; }
}
sampling=(--generate.temperature=0.8 --generate.top_k=40 --generate.top_p=0.95)
for ranks in 1 2 3; do
  generate "greedy$ranks" "$ranks"
  generate "sampled$ranks" "$ranks" "${sampling[@]}"
done
grep -q "generate: 60 prompts" "$work/greedy1.txt" || fail "no summary line: $(cat "$work/greedy1.txt")"
"$ddptrain" inspect "$work/sampled2.h5" >"$work/inspect.txt" ||
  { cat "$work/inspect.txt"; fail "inspect of a generations file exited with $?"; }
grep -q "ddptrain generations, 60 rows, .* new tokens, by 2 rank(s)" "$work/inspect.txt" &&
  grep -q "temperature 0.8, top_k 40, top_p 0.95" "$work/inspect.txt" ||
  fail "inspect did not summarise the generations: $(cat "$work/inspect.txt")"
"$python" "$repo/tests/e2e/generate_reference.py" "$checkpoint" "$work/prompts.h5" \
  "$work/greedy1.h5" 256 32 4 4 64 12 || fail "greedy generation differs from PyTorch's"
"$python" - "$work" <<'PY' || fail "the files of 1, 2 and 3 ranks differ"
import sys, h5py, numpy as np
work = sys.argv[1]
for kind in ("greedy", "sampled"):
    files = [h5py.File(f"{work}/{kind}{n}.h5", "r") for n in (1, 2, 3)]
    for name in ("tokens", "offsets", "finish", "logprobs"):
        for n, f in zip((2, 3), files[1:]):
            assert np.array_equal(files[0][name][()], f[name][()]), f"{kind} {name}: 1 and {n} ranks"
    assert set(files[0]["finish"][()]) == {0, 2}, files[0]["finish"][()]
    assert files[2].attrs["world_size"] == 3 and files[0].attrs["temperature"] == (0.8 if kind == "sampled" else 0)
greedy, sampled = (h5py.File(f"{work}/{k}1.h5", "r")["tokens"][()] for k in ("greedy", "sampled"))
assert not np.array_equal(greedy, sampled), "sampling chose the greedy tokens throughout"
print("1, 2 and 3 ranks: the same files, greedy and sampled")
PY
generate greedy_zero3 3 --ddp.zero=3
generate sampled_zero3 3 --ddp.zero=3 "${sampling[@]}"
grep -q "generate: ZeRO-3 over 3 ranks: each holds .* of the parameters" "$work/greedy_zero3.txt" ||
  fail "no ZeRO-3 memory line: $(cat "$work/greedy_zero3.txt")"
"$python" - "$work" <<'PY' || fail "ddp.zero = 3 generates other tokens than ddp.zero = 0"
import sys, h5py, numpy as np
work = sys.argv[1]
for kind in ("greedy", "sampled"):
    whole, sharded = (h5py.File(f"{work}/{kind}{s}.h5", "r") for s in ("1", "_zero3"))
    for name in ("tokens", "offsets", "finish"):
        assert np.array_equal(whole[name][()], sharded[name][()]), f"{kind} /{name}"
    worst = np.max(np.abs(whole["logprobs"][()] - sharded["logprobs"][()]))
    assert worst <= 1e-5, f"{kind} /logprobs differ by {worst}"
print("ddp.zero = 3 at 3 ranks: the same tokens, greedy and sampled")
PY
# A stop token: row 0's third greedy token ends it there.
stop=$("$python" -c "import h5py,sys; print(h5py.File(sys.argv[1])['tokens'][2])" "$work/greedy1.h5")
generate stopped 2 --generate.stop="$stop"
"$python" - "$work" "$stop" <<'PY' || fail "generate.stop did not end row 0 at token $stop"
import sys, h5py
f = h5py.File(f"{sys.argv[1]}/stopped.h5", "r")
first = f["tokens"][f["offsets"][0]:f["offsets"][1]]
assert f["finish"][0] == 1 and first[-1] == int(sys.argv[2]) and list(first).count(first[-1]) == 1, first
PY
# generate.batch_size = auto: trials against a simulated memory limit of 3 rows on the CPU.
generate_with() {  # NAME [OPTION...]: 2 ranks, greedy, the options given
  local name=$1
  shift
  "$mpiexec" -np 2 --oversubscribe "$ddptrain" generate "$gpt" --checkpoint "$checkpoint" \
    --input "$work/prompts.h5" --output "$work/$name.h5" --train.threads=1 \
    --generate.max_new_tokens=12 "$@" >"$work/$name.txt" 2>&1
}
DDPTRAIN_TEST_BATCH_LIMIT=3 generate_with auto --generate.batch_size=auto ||
  { cat "$work/auto.txt"; fail "generate.batch_size = auto exited with $?"; }
grep -q "generate.batch_size = auto: 3 (tried 1 2 4x 3; x: did not fit)" "$work/auto.txt" ||
  fail "auto did not settle on 3: $(cat "$work/auto.txt")"
generate_with three --generate.batch_size=3 || { cat "$work/three.txt"; fail "batch_size 3"; }
"$python" - "$work/auto.h5" "$work/three.h5" <<'PY' || fail "auto's file is not batch_size 3's"
import sys, h5py, numpy as np
auto, three = (h5py.File(p, "r") for p in sys.argv[1:3])
for name in ("tokens", "offsets", "finish", "logprobs"):
    assert np.array_equal(auto[name][()], three[name][()]), name
assert auto.attrs["batch_size"] == 3, auto.attrs["batch_size"]
PY
rc=0
generate_with auto_cpu --generate.batch_size=auto || rc=$?
message=$(cat "$work/auto_cpu.txt")
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for batch_size = auto on the CPU: $message"
expect_message "option 'generate.batch_size' = auto finds the most prompts per forward that fit" \
  "this run is on cpu: set a number"
rc=0
DDPTRAIN_TEST_BATCH_LIMIT=3 generate_with auto_zero3 --generate.batch_size=auto --ddp.zero=3 || rc=$?
message=$(cat "$work/auto_zero3.txt")
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for batch_size = auto with ZeRO-3: $message"
expect_message "does not go with ddp.zero = 3 on more than one rank"
[[ ! -e $work/auto_cpu.h5 && ! -e $work/auto_zero3.h5 ]] || fail "a refused generate wrote its output"

printf 'Hello world\n\nab\n' >"$work/lines.txt"
"$ddptrain" make-data prompts --from-text "$work/lines.txt" --output "$work/lines.h5" >/dev/null
"$python" - "$work/lines.h5" <<'PY' || fail "make-data prompts wrote the wrong layout"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert list(f["offsets"][()]) == [0, 11, 13] and bytes(f["tokens"][()].astype("u1")) == b"Hello worldab"
PY

# Every prompt already fills the context: no new token (datasets of size 0), every row finish 2.
"$python" - "$work/full.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = np.arange(64, dtype=np.int64) % 256
    f["offsets"] = np.array([0, 32, 64], dtype=np.int64)
PY
"$ddptrain" generate "$gpt" --checkpoint "$checkpoint" --input "$work/full.h5" \
  --output "$work/none.h5" >"$work/none.txt" 2>&1 || { cat "$work/none.txt"; fail "exit $?"; }
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1]); assert f['tokens'].shape == (0,) and list(f['finish'][()]) == [2, 2] and list(f['offsets'][()]) == [0, 0, 0]" \
  "$work/none.h5" || fail "prompts that fill the context: wrong file"
"$ddptrain" inspect "$work/none.h5" >/dev/null || fail "inspect of a file of no new tokens failed"
# More ranks than batches (3 ranks, 2 prompts of one length, batch_size 8): the same file.
"$python" - "$work/two.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = np.array([5, 6, 7, 8, 9, 10], dtype=np.int64)
    f["offsets"] = np.array([0, 3, 6], dtype=np.int64)
PY
for ranks in 1 3; do
  "$mpiexec" -np $ranks --oversubscribe "$ddptrain" generate "$gpt" --checkpoint "$checkpoint" \
    --input "$work/two.h5" --output "$work/two_$ranks.h5" --train.threads=1 \
    >"$work/two_$ranks.txt" 2>&1 || { cat "$work/two_$ranks.txt"; fail "$ranks ranks, 2 prompts"; }
done
"$python" -c "import h5py,sys,numpy as np; a,b=(h5py.File(p) for p in sys.argv[1:]); assert all(np.array_equal(a[d][()], b[d][()]) for d in ('tokens','offsets','finish','logprobs'))" \
  "$work/two_1.h5" "$work/two_3.h5" || fail "2 prompts on 3 ranks differ from 1 rank's"
# Batches handed out as ranks free up: rank 1 sleeps 1 s before each batch, so rank 0 makes most
# of the 15 (dealt in turns, each would make 7 or 8); the file is still 1 rank's.
DDPTRAIN_TEST_SLOW_RANK=1:1000 generate slow_rank 2
read -r by_0 by_1 < <(sed -n 's/.*(batches per rank: \([0-9]*\), \([0-9]*\)).*/\1 \2/p' \
  "$work/slow_rank.txt") || true
[[ -n ${by_1:-} && $by_0 -ge 12 && $((by_0 + by_1)) -eq 15 ]] ||
  fail "rank 0 did not take the batches of a slow rank 1: $(grep 'batches per rank' "$work/slow_rank.txt")"
"$python" -c "import h5py,sys,numpy as np; a,b=(h5py.File(p) for p in sys.argv[1:]); assert all(np.array_equal(a[d][()], b[d][()]) for d in ('tokens','offsets','finish','logprobs'))" \
  "$work/greedy1.h5" "$work/slow_rank.h5" || fail "a slow rank's file differs from 1 rank's"
# Rows kept for other settings are not used: started afresh, with a warning.
mkdir -p "$work/other.h5.partial" && echo "other settings" >"$work/other.h5.partial/settings.txt"
"$ddptrain" generate "$gpt" --checkpoint "$checkpoint" --input "$work/two.h5" \
  --output "$work/other.h5" >"$work/other.txt" 2>&1 || { cat "$work/other.txt"; fail "exit $?"; }
grep -q "holds rows of other settings: starting afresh" "$work/other.txt" ||
  fail "no warning for a partial folder of other settings: $(cat "$work/other.txt")"
[[ -e $work/other.h5 && ! -e $work/other.h5.partial ]] || fail "no output, or the folder is left"

# Text: a byte-level GPT (inputs/text_bytes.cfg, a few steps) on the GPL's bytes continues a line,
# printed alone on standard output (messages such as LibTorch 2.6's oneDNN warning go to stderr).
"$ddptrain" make-data tokens --from-text /usr/share/common-licenses/GPL-3 --val-tokens 2000 \
  --output "$work/text.h5" >/dev/null
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1]); assert bytes(f['tokens'][:20].astype('u1')) == open('/usr/share/common-licenses/GPL-3','rb').read(20)" \
  "$work/text.h5" || fail "make-data tokens --from-text did not write the text's bytes"
text_deck=(--data.path="$work/text.h5" --run.dir="$work/text_run" --train.threads=1)
"$ddptrain" train "$repo/inputs/text_bytes.cfg" "${text_deck[@]}" --train.steps=20 \
  --checkpoint.every=20 --eval.every=0 --model.n_layer=1 >"$work/text_train.txt" 2>&1 ||
  { cat "$work/text_train.txt"; fail "training on text exited with $?"; }
"$ddptrain" generate "$repo/inputs/text_bytes.cfg" "${text_deck[@]}" --model.n_layer=1 \
  --checkpoint "$work/text_run/checkpoints/latest" --prompt "This program is" \
  --generate.max_new_tokens=20 --generate.stop=0 >"$work/text_out.txt" 2>"$work/text_err.txt" ||
  { cat "$work/text_out.txt" "$work/text_err.txt"; fail "generate --prompt exited with $?"; }
[[ $(head -c 15 "$work/text_out.txt") == "This program is" && $(wc -c <"$work/text_out.txt") -gt 16 ]] ||
  fail "generate --prompt did not print the prompt and its continuation: $(cat "$work/text_out.txt")"
rc=0
message=$("$ddptrain" generate "$repo/inputs/gpt_tokens.cfg" --checkpoint "$checkpoint" \
  --prompt "hello" --model.vocab=300 2>&1 >/dev/null) || rc=$?
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for --prompt with a vocabulary of 300: $message"
expect_message "--prompt takes text for a byte-level model (vocabulary 256); this one has 300"

# Bad input: the exit code, a line naming the fault, and no output file.
refused() {  # CODE TEXT PROMPTS [OPTION...]
  local code=$1 text=$2 prompts=$3 rc=0
  shift 3
  message=$("$ddptrain" generate "$gpt" --checkpoint "$checkpoint" --input "$prompts" \
    --output "$work/refused.h5" "$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq $code ]] || fail "exit $rc, not $code, for '$text': $message"
  expect_message "$text"
  [[ ! -e $work/refused.h5 ]] || fail "a refused generate ($text) wrote its output"
}
bad_prompts() {  # NAME TOKENS OFFSETS (Python lists; OFFSETS None: no dataset)
  "$python" - "$work/$1.h5" "$2" "$3" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["tokens"] = np.array(eval(sys.argv[2]), dtype=np.int64)
    offsets = eval(sys.argv[3])
    if offsets is not None:
        f["offsets"] = np.array(offsets, dtype=np.int64)
PY
}
bad_prompts no_offsets "[1, 2, 3]" None
refused 3 "offsets" "$work/no_offsets.h5"
bad_prompts decreasing "[1, 2, 3, 4]" "[0, 3, 2, 4]"
refused 3 "row 1 is empty or its offsets decrease" "$work/decreasing.h5"
bad_prompts empty_row "[1, 2, 3, 4]" "[0, 2, 2, 4]"
refused 3 "row 1 is empty" "$work/empty_row.h5"
bad_prompts short_offsets "[1, 2, 3, 4]" "[0, 2, 3]"
refused 3 "the last offset is 3, but 'tokens' holds 4 ids" "$work/short_offsets.h5"
bad_prompts outside_vocab "[1, 2, 300, 4]" "[0, 2, 4]"
refused 3 "row 1 holds token id 300, outside the model's vocabulary of 256" "$work/outside_vocab.h5"
bad_prompts too_long "list(range(40))" "[0, 1, 40]"
refused 3 "row 1 has 39 tokens, more than the model's context of 32" "$work/too_long.h5"
refused 3 "missing.h5" "$work/missing.h5"
cp "$work/prompts.h5" "$work/same.h5"
refused_in_place() {
  local rc=0
  message=$("$ddptrain" generate "$gpt" --checkpoint "$checkpoint" --input "$work/same.h5" \
    --output "$work/same.h5" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq 2 ]] || fail "exit $rc, not 2, for an output that is the input: $message"
  expect_message "would replace"
  cmp -s "$work/prompts.h5" "$work/same.h5" || fail "a refused generate replaced its input"
}
refused_in_place
rc=0
message=$("$ddptrain" generate "$deck" --checkpoint "$checkpoint" --input "$work/prompts.h5" \
  --output "$work/refused.h5" 2>&1 >/dev/null) || rc=$?
[[ $rc -eq 2 ]] || fail "exit $rc, not 2, for a classification deck: $message"
expect_message "generate needs a next-token model"
[[ ! -e $work/refused.h5 ]] || fail "a refused generate wrote its output"
echo "generate checks passed"
