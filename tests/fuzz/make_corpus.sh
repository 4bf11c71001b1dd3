#!/usr/bin/env bash
# Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/) from ddptrain's own
# outputs, and the option dictionary of fuzz_config, small enough to keep in git (each file a few
# KiB to 50 KiB). Run again after a change to the file formats; the checkpoint seeds must come
# from the deck and overrides that fuzz_checkpoint.cpp builds its run from (kOverrides there).
# Usage: tests/fuzz/make_corpus.sh DDPTRAIN    (a built ddptrain executable)
set -euo pipefail
ddptrain=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=$here/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0
rm -rf "$corpus"
mkdir -p "$corpus"/{config,checkpoint,data_file,metrics_resume,inspect,safetensors}

# config: every deck of inputs/, each with a few command-line overrides (lines starting "--").
for deck in "$repo"/inputs/*.cfg; do
  name=$(basename "$deck" .cfg)
  { cat "$deck"; printf -- '--train.steps=7\n--optim.lr=0.5\n--log.progress=lines\n'; } \
    >"$corpus/config/$name"
done
printf -- '--data.type=hdf5\n--data.path=x.h5\n--data.val_fraction=0.1\n' >"$corpus/config/overrides_only"
# The dictionary: every option name as an override and as a deck key, and every section.
"$ddptrain" --help | grep -oE -- '--[a-z_]+\.[a-z_0-9]+' | sort -u | while read -r option; do
  key=${option#--}
  printf '"%s="\n"%s = "\n"[%s]"\n' "$option" "${key#*.}" "${key%%.*}"
done | sort -u >"$here/fuzz_config.dict"

# One short run (the checkpoint target's deck), with evaluation, checkpoints and an EMA.
overrides=(--data.samples=256 --data.features=8 --data.classes=3 --data.teacher_hidden=4
           --model.hidden=8 --train.batch_size=8 --train.ema_decay=0.9 --data.val_fraction=0.25)
"$ddptrain" train "$repo/inputs/quickstart.cfg" "${overrides[@]}" --run.dir="$work/run" \
  --train.steps=30 --log.every=10 --eval.every=10 --checkpoint.every=10 --checkpoint.keep=3 \
  >"$work/train.txt" 2>&1 || { cat "$work/train.txt"; exit 1; }
cp "$work/run/checkpoints/step_00000030.h5" "$corpus/checkpoint/"
cp "$work/run/metrics.h5" "$corpus/metrics_resume/classification.h5"
cp "$work/run/metrics.h5" "$corpus/inspect/metrics.h5"
cp "$work/run/checkpoints/step_00000030.h5" "$corpus/inspect/checkpoint.h5"

# data files: classification and regression with named validation sets, and a token stream.
"$ddptrain" make-data classification --output "$corpus/data_file/classification.h5" \
  --samples 64 --features 8 --classes 3 --teacher-hidden 4 --val-samples 16 >/dev/null
"$ddptrain" make-data regression --output "$corpus/data_file/regression.h5" \
  --samples 64 --features 8 --outputs 2 --teacher-hidden 4 --val-samples 16 >/dev/null
"$ddptrain" make-data tokens --output "$corpus/data_file/tokens.h5" --tokens 4000 --vocab 64 \
  --val-tokens 1000 >/dev/null

# predictions of the run's last checkpoint on the classification file, for inspect.
"$ddptrain" predict "$work/run/config.cfg" --checkpoint "$work/run/checkpoints/step_00000030.h5" \
  --input "$corpus/data_file/classification.h5" --output "$corpus/inspect/predictions.h5" \
  >"$work/predict.txt" 2>&1 || { cat "$work/predict.txt"; exit 1; }

# safetensors: the export of a one-step GPT (GPT-2's layout) and of the run's MLP.
"$ddptrain" train "$repo/inputs/gpt_tokens.cfg" --run.dir="$work/gpt" --train.steps=1 \
  --checkpoint.every=1 --eval.every=0 --model.n_layer=1 --model.n_head=2 --model.n_embd=8 \
  --data.vocab=64 >/dev/null
"$ddptrain" export "$work/gpt/config.cfg" --checkpoint "$work/gpt/checkpoints/latest" \
  --output "$work/gpt_export" >/dev/null
cp "$work/gpt_export/model.safetensors" "$corpus/safetensors/gpt.safetensors"
"$ddptrain" export "$work/run/config.cfg" --checkpoint "$work/run/checkpoints/step_00000030.h5" \
  --output "$work/mlp_export" >/dev/null
cp "$work/mlp_export/model.safetensors" "$corpus/safetensors/mlp.safetensors"

du -b "$corpus"/*/* | sort -n
