#!/usr/bin/env bash
# The deck's walk of the train subcommand (walk.py says what is counted): builds ddptrain from
# CHECKOUT (default: this repository) with every function of src/ instrumented
# (-finstrument-functions, call_trace.c), trains the quick start for one step at 2 ranks (so the
# per-step loop is counted once), and prints rank 0's walk: its stays, the climbs, how often the
# train subcommand's file is visited and the memory check entered.
#   share/dev/deck_walk/deck_walk.sh [CHECKOUT] [--verbose]
# The build goes to CHECKOUT/build/deck-walk (about 10 minutes from cold on 2 cores; incremental
# after that). An older commit: `git worktree add /tmp/old COMMIT`, then pass /tmp/old.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
checkout=$(cd "$here/../../.." && pwd)
if [[ $# -gt 0 && $1 != --* ]]; then
  checkout=$(cd "$1" && pwd)
  shift
fi
build=${DECK_WALK_BUILD:-$checkout/build/deck-walk}
mkdir -p "$build"
gcc -O2 -shared -fPIC "$here/call_trace.c" -o "$build/libcall_trace.so"
# -g1: line tables, for addr2line's file names. Functions defined under /usr/ (LibTorch, the
# standard library) are not instrumented: the walk is of our files.
cmake -S "$checkout" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-g1 -finstrument-functions -finstrument-functions-exclude-file-list=/usr/" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--no-as-needed $build/libcall_trace.so -Wl,-rpath,$build" \
  >"$build/configure.log"
cmake --build "$build" -j "$(nproc --all)" --target ddptrain >"$build/build.log" ||
  { tail -30 "$build/build.log"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2016  # the rank is each process's own
mpirun -np 2 --oversubscribe bash -c \
  'DECK_WALK_TRACE='"$work"'/trace.$OMPI_COMM_WORLD_RANK exec "$@"' trace \
  "$build/bin/ddptrain" train "$checkout/inputs/quickstart.cfg" --train.steps=1 \
  --run.dir="$work/run" >"$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
trace=$(ls "$work"/trace.0.*)
/usr/bin/python3 "$here/walk.py" --binary "$build/bin/ddptrain" --src "$checkout/src" \
  --trace "$trace" "$@"
