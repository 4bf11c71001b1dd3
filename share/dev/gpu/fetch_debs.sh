#!/usr/bin/env bash
# Run HERE (a Debian 12 machine with the package registry): downloads the Debian packages that
# the GPU machine lacks (Open MPI, parallel HDF5, Boost.Program_options, spdlog/fmt, GoogleTest,
# and the libraries they load) into .gpu-debs/ at the repository root, which git ignores (it is
# added to .git/info/exclude) and `device run` carries (carry: [".gpu-debs"]).
# The GPU machine brings its own C/C++ runtime, CUDA, NCCL and PyTorch; nothing basic is sent.
# Usage: share/dev/gpu/fetch_debs.sh   (then: see build_and_test.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
out=$repo/.gpu-debs
packages=(
  # Open MPI 4.1 and what its libraries and mpirun load (PMIx, libevent, hwloc, fabrics).
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common
  libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7 libhwloc15 libfabric1 libucx0
  libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1
  libltdl7 libmunge2
  # Parallel HDF5 1.10 and its compression libraries.
  libhdf5-openmpi-dev libhdf5-openmpi-103-1 libsz2 libaec0
  # Boost.Program_options (headers come with libboost1.74-dev), spdlog + fmt, GoogleTest.
  libboost-program-options-dev libboost-program-options1.74-dev libboost-program-options1.74.0
  libboost1.74-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libgtest-dev
)
mkdir -p "$out"
exclude=$(cd "$repo" && realpath "$(git rev-parse --git-path info/exclude)")
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu-debs/' "$exclude" 2>/dev/null ||
  echo '/.gpu-debs/' >>"$exclude"
missing=()
for p in "${packages[@]}"; do
  compgen -G "$out/${p}_*.deb" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  (cd "$out" && apt-get download -qq "${missing[@]}")
fi
echo "$(ls "$out" | wc -l) packages, $(du -sh "$out" | cut -f1) in $out"
