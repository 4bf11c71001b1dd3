#!/usr/bin/env bash
# The C and C++ sources of src/ and tests/ are as clang-format leaves them (.clang-format at the
# top). Formatters of other versions format some constructs otherwise, so the check uses the
# version the style was set with (clang-format 14, Debian 12's); tests/CMakeLists.txt registers
# the test where that version is installed. To fix a file: clang-format-14 -i FILE.
# Usage: formatting.sh CLANG_FORMAT SOURCE_DIR
set -euo pipefail
clang_format=$1
cd "$2"
mapfile -d '' files < <(find src tests -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' \
  -o -name '*.h' \) -print0 | sort -z)
((${#files[@]} > 0)) || { echo "FAIL: no C or C++ source found under $2/src and $2/tests"; exit 1; }
# One process for every file (a process each took 50 s): it names each unformatted file in its
# warnings.
report=$("$clang_format" --dry-run "${files[@]}" 2>&1) || {
  echo "FAIL: $clang_format failed: $report"
  exit 1
}
readonly kWarning='warning: code should be clang-formatted'
mapfile -t unformatted < <(sed -n "s/^\(.*\):[0-9]*:[0-9]*: $kWarning.*/\1/p" <<<"$report" | sort -u)
if ((${#unformatted[@]})); then
  echo "FAIL: ${#unformatted[@]} of ${#files[@]} files are not formatted as .clang-format says" \
    "(fix: $(basename "$clang_format") -i FILE):"
  printf '  %s\n' "${unformatted[@]}"
  "$clang_format" --dry-run "${unformatted[0]}" 2>&1 | head -n 20
  exit 1
fi
echo "PASS: ${#files[@]} files formatted as .clang-format says ($("$clang_format" --version))"
