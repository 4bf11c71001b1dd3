#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, coverage-instrumented
# ddptrain_core) in build/fuzz, then runs each for SECONDS (default 600) from the seed corpus in
# tests/fuzz/corpus/<target>, and prints per target: runs, executions per second, new corpus
# units, crashes. Fails (exit 1) if any target found a crash, hang, sanitizer report, runaway
# allocation or contract violation; its input is then in build/fuzz/artifacts/<target>/.
# Usage: share/dev/fuzz.sh [SECONDS] [TARGET...]     (targets: all six when none is named)
# Safe to run again (and two at a time: the build step is serialised): it reuses the build and
# grows the working corpus in build/fuzz/corpus/<target>; the seeds in tests/ are never changed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DDPTRAIN_FUZZ_BUILD_DIR:-$repo/build/fuzz}
seconds=${1:-600}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_config fuzz_checkpoint fuzz_data_file
                                       fuzz_metrics_resume fuzz_inspect fuzz_safetensors)
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2; }

# clang and its libFuzzer, installed when missing: Debian 12's clang-14, Debian 13's clang-19
# (DDPTRAIN_FUZZ_CLANG picks another version).
debian=$(cut -d. -f1 /etc/debian_version 2>/dev/null || echo 12)
clang=${DDPTRAIN_FUZZ_CLANG:-$([[ $debian == 13 ]] && echo 19 || echo 14)}
if ! command -v "clang++-$clang" >/dev/null ||
   ! compgen -G "/usr/lib/llvm-$clang/lib/clang/*/lib/*/libclang_rt.fuzzer*.a" >/dev/null; then
  echo "== installing clang-$clang libclang-rt-$clang-dev"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "clang-$clang" "libclang-rt-$clang-dev"
fi

mkdir -p "$build"
# One build at a time in $build: a second fuzz.sh started beside this one waits here.
(
  flock 9
  if [[ ! -f $build/CMakeCache.txt ]]; then
    # -O1 with line tables: sanitizer stacks name lines, and the torch-heavy sources compile in
    # reasonable time; no NCCL (the targets run on CPU).
    cmake -S "$repo" -B "$build" -DCMAKE_C_COMPILER="clang-$clang" \
      -DCMAKE_CXX_COMPILER="clang++-$clang" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" \
      -DDDPTRAIN_FUZZ=ON -DDDPTRAIN_BUILD_TESTS=OFF -DDDPTRAIN_WITH_NCCL=OFF >"$build/configure.log" \
      || { cat "$build/configure.log"; exit 1; }
  fi
  cmake --build "$build" --target "${targets[@]}" -j2
) 9>"$build/.build.lock"

# Leaks: off, since Open MPI and LibTorch keep allocations until exit by design; every other
# sanitizer report ends the run. allocator_may_return_null: an impossible malloc returns NULL, as
# glibc's does (HDF5 asks for 3 PiB when a damaged header says so, and reports the failure).
# suppressions, with Debian 12's libhdf5 1.10 only (its soname is libhdf5_openmpi.so.103): the
# reports its own reads past its buffers raise in the interceptors (tests/fuzz/libhdf5_1_10.supp
# says which and why). With Debian 13's HDF5 1.14 nothing is suppressed. Inherited by
# ddptrain-h5probe.
asan_options=detect_leaks=0:abort_on_error=1:symbolize=1:allocator_may_return_null=1
if ldconfig -p | grep -q 'libhdf5_openmpi\.so\.103 '; then
  asan_options+=:suppressions=$repo/tests/fuzz/libhdf5_1_10.supp
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_options}
echo "ASAN_OPTIONS=$ASAN_OPTIONS"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1
# ddptrain-h5probe (run before every HDF5 file is opened) is given 1 s, not 60: a real file takes
# 20-90 ms under AddressSanitizer, a target may open one several times per input, and libFuzzer
# takes an input that runs 10 s (-timeout below) for a hang of the target itself.
export DDPTRAIN_H5PROBE_SECONDS=1

failed=0
printf '%-22s %10s %8s %9s %8s\n' target runs exec/s new_units crashes
for target in "${targets[@]}"; do
  corpus=$build/corpus/$target
  artifacts=$build/artifacts/$target
  log=$build/logs/$target.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  before=$(find "$artifacts" -type f | wc -l)
  # Inputs that once broke the target (tests/fuzz/findings) run first, as seeds.
  seeds=("$repo/tests/fuzz/corpus/${target#fuzz_}")
  [[ -d $repo/tests/fuzz/findings/${target#fuzz_} ]] && seeds+=("$repo/tests/fuzz/findings/${target#fuzz_}")
  # The files that crash libhdf5 itself (refused since ddptrain-h5probe checks every file first):
  # seeds of every target that reads HDF5.
  [[ $target != fuzz_config ]] && seeds+=("$repo/tests/fuzz/hdf5_crashes")
  dict=()
  [[ -f $repo/tests/fuzz/$target.dict ]] && dict=(-dict="$repo/tests/fuzz/$target.dict")
  # -timeout: an input that takes 10 s is a hang (the seeds take milliseconds);
  # -rss_limit_mb: a damaged file that makes a reader use gigabytes is a defect too; single
  # allocations are not limited (-malloc_limit_mb), since one that cannot be had fails cleanly.
  # The targets write each input as a file there (in memory where /dev/shm exists).
  shm=/dev/shm
  [[ -d $shm ]] || shm=${TMPDIR:-/tmp}
  scratch=$(mktemp -d "$shm/ddptrain_fuzz_$target.XXXXXX")
  rc=0
  (cd "$build" && DDPTRAIN_FUZZ_SCRATCH=$scratch "$build/bin/$target" "$corpus" "${seeds[@]}" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=1048576 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "${dict[@]}") >"$log" 2>&1 || rc=$?
  rm -rf "$scratch"  # what a crashed input left there
  after=$(find "$artifacts" -type f | wc -l)
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  crashes=$((after - before))
  [[ $rc -ne 0 && $crashes -eq 0 ]] && crashes="rc=$rc"
  printf '%-22s %10s %8s %9s %8s\n' "$target" "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "$(stat new_units_added)" "$crashes"
  if [[ $rc -ne 0 || $crashes != 0 ]]; then
    failed=1
    echo "  $target failed: see $log and $artifacts/" >&2
    grep -m3 -E "ERROR|contract violated|runtime error" "$log" | sed 's/^/  /' >&2 || true
  fi
done
exit $failed
