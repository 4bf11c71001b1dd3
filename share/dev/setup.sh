#!/usr/bin/env bash
# Installs what ddptrain needs on Debian 12 or 13 (only what is missing) and builds it into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
# Usage: share/dev/setup.sh [--build-only | --run-only] [--packages-only]   (as root, or sudo)
#        --build-only: only what building needs, not what the tests run (Debian's python3 with
#        torch, SLURM, Lmod); for a machine that builds but does not test (the CUDA CI leg).
#        --run-only: as --build-only, and builds only what a training run needs (ddptrain and
#        ddptrain-h5probe, which it starts to check HDF5 files), not the tests and benchmarks:
#        the quick start. A later run without it (check.sh) builds the rest in the same tree.
#        --packages-only: installs the packages and builds nothing (the CI installs the Debian 13
#        roots' packages while the Debian 12 tree builds).
# Env:   DDPTRAIN_BUILD_DIR (default <repo>/build), DDPTRAIN_JOBS (default: number of cores),
#        DDPTRAIN_CMAKE_ARGS (extra configure arguments, e.g. -DDDPTRAIN_WITH_NCCL=OFF),
#        DDPTRAIN_EXTRA_PACKAGES (more Debian packages, e.g. libtorch-cuda-dev for the CUDA CI leg),
#        DDPTRAIN_TARGETS (the targets to build, space-separated; default every target)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DDPTRAIN_BUILD_DIR:-$repo/build}
jobs=${DDPTRAIN_JOBS:-$(nproc --all)}

build_only=false packages_only=false
read -r -a targets <<<"${DDPTRAIN_TARGETS:-}"  # empty: every target
for arg in "$@"; do
  case $arg in
    --build-only) build_only=true ;;
    --run-only) build_only=true targets=(ddptrain ddptrain-h5probe) ;;
    --packages-only) packages_only=true ;;
    *) echo "usage: $0 [--build-only | --run-only] [--packages-only]" >&2; exit 2 ;;
  esac
done

# Debian packages: toolchain, LibTorch (CPU), Open MPI, parallel HDF5, Boost, GoogleTest,
# spdlog/fmt, nlohmann/json (the safetensors header), ICU (GPT-2's tokenizer's Unicode
# categories), OpenBLAS (LibTorch falls back to the ~10x slower reference BLAS without it),
# oneDNN's headers (the built-in models' CPU products, src/models/cpu_gemm.hpp; LibTorch already
# depends on its library), ccache. Where LibTorch with CUDA (libtorch-cuda-dev, Debian 13) is installed it stands in for
# the CPU one: the two conflict.
packages=(
  build-essential cmake ninja-build ccache git pkg-config
  libopenblas0-openmp libblas-dev libdnnl-dev
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev hdf5-tools
  libboost-program-options-dev
  libgtest-dev googletest
  libspdlog-dev libfmt-dev nlohmann-json3-dev libicu-dev
)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
read -r -a extra_packages <<<"${DDPTRAIN_EXTRA_PACKAGES:-}"
packages+=("${extra_packages[@]}")
[[ " ${packages[*]} " == *" libtorch-cuda-dev "* ]] || installed libtorch-cuda-dev ||
  packages+=(libtorch-dev)
# What the tests run: Debian's python3 with torch/h5py for test models and post-analysis, and
# SLURM + Lmod: slurm/ and modules/ are tested against a real SLURM and Lmod (tests/cluster/);
# nothing here starts their daemons: the tests do, on loopback, and stop them again.
# Node.js and npm: the tokenizer test's reference, the npm package gpt-3-encoder
# (tests/e2e/fetch_gpt3_encoder.sh). A Node.js from elsewhere (NodeSource's) brings its own npm,
# which Debian's npm package would conflict with.
$build_only || packages+=(
  python3 python3-torch python3-h5py python3-matplotlib
  slurm-wlm slurmctld slurmd slurm-client munge lmod
)
if ! $build_only; then
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi
# The formatting check (tests/lint/formatting.sh) asks the clang-format the style was set with,
# Debian 12's; another Debian's version would format some lines otherwise.
if ! $build_only && [[ $(. /etc/os-release && echo "${VERSION_CODENAME:-}") == bookworm ]]; then
  packages+=(clang-format-14)
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "== all Debian packages present"
fi
$packages_only && exit 0

# CUDA + NCCL are optional; on machines that have them (nvcc on PATH, or the usual
# /usr/local/cuda) the NCCL backend is built. The toolkit's real path, whatever PATH says: the
# include directory is on every compile line, and the same line is what lets a build with another
# environment (CI's) reuse this one's ccache entries.
# Ninja: a target's files compile while the libraries it links are still building (Make waits for
# each target in turn), which keeps both cores of a small machine busy.
cmake_args=(-S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release)
nvcc=$(command -v nvcc 2>/dev/null || true)
[[ -n $nvcc || ! -x /usr/local/cuda/bin/nvcc ]] || nvcc=/usr/local/cuda/bin/nvcc
if [[ -n $nvcc ]]; then
  cmake_args+=(-DCUDAToolkit_ROOT="$(dirname "$(dirname "$(readlink -f "$nvcc")")")")
fi
read -r -a extra_args <<<"${DDPTRAIN_CMAKE_ARGS:-}"
cmake_args+=("${extra_args[@]}")
# A tree configured for another generator (Make, before Ninja) is configured afresh.
if [[ -f "$build/CMakeCache.txt" ]] &&
  ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
  echo "== $build was configured for another generator: configuring it for Ninja"
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
if [[ ! -f "$build/CMakeCache.txt" || ${#extra_args[@]} -gt 0 ]]; then
  echo "== configuring $build ${extra_args[*]}"
  cmake "${cmake_args[@]}"
fi
echo "== building ${targets[*]:-every target} with $jobs jobs"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if ((${#targets[@]})); then
  cmake --build "$build" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$build" -j "$jobs"
fi
echo "== built $build/bin/ddptrain"
