#!/usr/bin/env bash
# Run HERE (a Debian 12 machine with the package registry): downloads the Debian packages that
# the GPU machine lacks (Open MPI, parallel HDF5, Boost.Program_options, spdlog/fmt, GoogleTest,
# ICU, and the libraries they load) into .gpu-debs/ at the repository root, which git ignores (it is
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
  # nlohmann/json, header-only (the safetensors header's parser).
  nlohmann-json3-dev
  # ICU 72 (GPT-2's tokenizer's Unicode categories): the machine may hold another version's
  # library, and no headers.
  libicu-dev libicu72
)
# The libraries those load that a base system usually has (HDF5's libcurl and libssl, Kerberos,
# GnuTLS, zlib...): build_and_test.sh links each in only where the GPU machine lacks its soname.
fallback=(
  libcurl4 libnghttp2-14 libidn2-0 librtmp1 libssh2-1 libpsl5 libgssapi-krb5-2 libkrb5-3
  libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2 libldap-2.5-0 libsasl2-2 libbrotli1
  libzstd1 libssl3 libunistring2 libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0
  libtasn1-6 libffi8 libudev1 libuuid1 libatomic1 zlib1g
)
mkdir -p "$out/fallback"
exclude=$(cd "$repo" && realpath "$(git rev-parse --git-path info/exclude)")
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu-debs/' "$exclude" 2>/dev/null ||
  echo '/.gpu-debs/' >>"$exclude"
updated=
download() {  # download DIR PACKAGE...: those not in DIR yet
  local dir=$1 p missing=()
  shift
  for p in "$@"; do
    compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ -n $updated ]] || { apt-get update -qq; updated=1; }
  (cd "$dir" && apt-get download -qq "${missing[@]}")
}
download "$out" "${packages[@]}"
download "$out/fallback" "${fallback[@]}"
debs=("$out"/*.deb "$out"/fallback/*.deb)
echo "${#debs[@]} packages, $(du -sh "$out" | cut -f1) in $out"
