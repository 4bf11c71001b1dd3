#!/usr/bin/env bash
# Bad input gives exit code 2 (deck, command line) or 3 (a data or model file), a one-line message
# naming the problem, and writes nothing. Without torch in /usr/bin/python3 (the model whose output
# does not fit the loss is made with it) the other checks run, then the test exits 77 (skipped).
# Usage: bad_input.sh DDPTRAIN DECK
set -u
ddptrain=$1
deck=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect_error EXIT_CODE DESCRIPTION EXPECTED_TEXT ARGS...
expect_error() {
  local code=$1 what=$2 expected=$3
  shift 3
  local out rc
  out=$("$ddptrain" "$@" --run.dir="$work/run" 2>&1 >/dev/null)
  rc=$?
  local lines
  lines=$(printf '%s\n' "$out" | grep -c .)
  if [[ $rc -ne $code ]]; then
    echo "FAIL $what: exit code $rc, expected $code (stderr: $out)"; failures=$((failures + 1))
  elif [[ "$out" != *"$expected"* ]]; then
    echo "FAIL $what: message does not name '$expected': $out"; failures=$((failures + 1))
  elif [[ $lines -ne 1 ]]; then
    echo "FAIL $what: expected a one-line message, got $lines lines: $out"; failures=$((failures + 1))
  elif [[ -e "$work/run" ]]; then
    echo "FAIL $what: run.dir was created"; failures=$((failures + 1))
  else
    echo "ok   $what: $out"
  fi
}
expect_usage_error() { expect_error 2 "$@"; }

printf '[train]\nbatch_size = 8\nsteps = 2\n[bogus]\nkey = 1\n' >"$work/unknown.cfg"
printf '[train]\nbatch_size = eight\n' >"$work/malformed.cfg"

expect_usage_error "unknown option on the command line" "train.bogus" train "$deck" --train.bogus=1
expect_usage_error "unknown key in the deck" "bogus.key" train "$work/unknown.cfg"
expect_usage_error "malformed value" "train.batch_size" train "$deck" --train.batch_size=abc
expect_usage_error "malformed value in the deck" "batch_size" train "$work/malformed.cfg"
expect_usage_error "missing deck" "no-such-deck.cfg" train "$work/no-such-deck.cfg"
expect_usage_error "negative batch size" "train.batch_size" train "$deck" --train.batch_size=-3
expect_usage_error "unknown choice" "optim.type" train "$deck" --optim.type=lamb
expect_usage_error "batch size auto on a CPU" "this run is on cpu: set a number" train "$deck" \
  --train.batch_size=auto
expect_usage_error "batch size auto and a global batch" "exclude each other" train "$deck" \
  --train.batch_size=auto --train.global_batch=64
expect_usage_error "unknown command" "frobnicate" frobnicate

# Models that cannot be built, loaded or trained on the deck's data.
expect_usage_error "unknown model type" "model.type" train "$deck" --model.type=transformer
echo "not a model" >"$work/not_a_model.pt"
expect_error 3 "TorchScript file that is not one" "not_a_model.pt" train "$deck" \
  --model.type=torchscript --model.path="$work/not_a_model.pt"
expect_error 3 "missing TorchScript file" "missing.pt" train "$deck" \
  --model.type=torchscript --model.path="$work/missing.pt"
expect_usage_error "GPT on rows of features" "model.type" train "$deck" --model.type=gpt
expect_usage_error "CNN on rows of features" "model.type" train "$deck" --model.type=cnn
expect_usage_error "MLP on token windows" "model.type" train "$deck" \
  --data.type=synthetic_tokens --data.vocab=64
expect_usage_error "heads that do not divide the width" "model.n_head" train "$deck" \
  --model.type=gpt --model.n_head=3 --model.n_embd=64
expect_usage_error "fp16 on a CPU" "train.precision" train "$deck" --train.precision=fp16

# Sizes that parse but cannot fit in memory: refused before anything is allocated, with the
# memory exit code.
expect_error 6 "absurd MLP width" "model.hidden = 100000000" train "$deck" \
  --model.hidden=100000000
expect_error 6 "absurd synthetic data" "data.samples = 100000000000" train "$deck" \
  --data.samples=100000000000
expect_error 6 "absurd GPT width" "model.n_embd = 1000000" train "$deck" \
  --data.type=synthetic_tokens --data.vocab=64 --model.type=gpt --model.n_embd=1000000
# A data file whose targets claim 2^56 + 2 columns (chunked, nothing stored): a model of 1.8e19
# parameters, more bytes than an int64 counts (the message once said "-9223372036854775808 B").
/usr/bin/python3 - "$work/wide.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("inputs", shape=(64, 8), dtype="f4", chunks=(64, 8))
    f.create_dataset("targets", shape=(64, 2**56 + 2), dtype="f4", chunks=(64, 2))
PY
expect_error 6 "data file with absurd targets" "72057594037927938 outputs" train "$deck" \
  --data.type=hdf5 --data.path="$work/wide.h5"
out=$("$ddptrain" train "$deck" --data.type=hdf5 --data.path="$work/wide.h5" \
  --run.dir="$work/run" 2>&1 >/dev/null)
if [[ $out == *"-9223372036854775808"* || $out != *EiB* ]]; then
  echo "FAIL sizes beyond int64 are shown in EiB: $out"; failures=$((failures + 1))
fi
with_torch=0
if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  with_torch=1
  # A model with 3 outputs for 10 classes: the loss cannot use it.
  /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/make_torchscript_mlp.py" "$work/three.pt" \
    --inputs 64 --classes 3 >/dev/null
  expect_usage_error "model output that does not fit the loss" "shape [2, 3]" train "$deck" \
    --model.type=torchscript --model.path="$work/three.pt"
fi

if [[ $failures -ne 0 ]]; then
  echo "$failures bad-input check(s) failed"
  exit 1
fi
if ((!with_torch)); then
  # The other checks passed; without the TorchScript model the test is a skip, not a pass.
  echo "SKIP: /usr/bin/python3 cannot import torch (package python3-torch): the model output" \
    "check did not run"
  exit 77
fi
echo "all bad-input checks passed"
