#!/usr/bin/env bash
# A Debian 13 ("trixie") root for the second stack CI builds against (LibTorch 2.6, Open MPI 5,
# HDF5 1.14, and in the cuda root CUDA 12.4 with NCCL 2.22), and commands run inside it.
#   debian13.sh NAME CMD...   make the root NAME if it is not there yet (debootstrap, about 30 s,
#                             once), then run CMD in it as root, in the checkout, with /proc,
#                             /sys, /dev, /dev/shm, the checkout (at the same path) and the ccache
#                             directory mounted. Exits with CMD's status.
# NAME is a word (cpu, cuda): LibTorch's CPU and CUDA packages conflict, so each gets its own root,
# at $DDPTRAIN_DEBIAN13_DIR/NAME (default /var/cache/ddptrain/debian13). What CMD installs stays
# in the root for the next run; delete the folder to start again.
# DDPTRAIN_DEBIAN13_SUITE=bookworm makes a Debian 12 root instead: a machine with nothing
# installed, to time the README's two commands as a new user meets them, e.g.
#   DDPTRAIN_DEBIAN13_SUITE=bookworm DDPTRAIN_BUILD_DIR=$PWD/build/fresh12 CCACHE_DIR=$(mktemp -d) \
#     share/dev/ci/debian13.sh fresh12 bash share/dev/quickstart.sh
# Every mount is made in a mount namespace of this script's own (unshare -m), unmounted in reverse
# order when CMD ends, and gone with the namespace if the script is killed before it can unmount.
set -euo pipefail
[[ $# -ge 2 && $1 =~ ^[a-z0-9-]+$ ]] || { echo "usage: $0 NAME CMD..." >&2; exit 2; }
name=$1
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
root=${DDPTRAIN_DEBIAN13_DIR:-/var/cache/ddptrain/debian13}/$name
suite=${DDPTRAIN_DEBIAN13_SUITE:-trixie}
mirror=${DDPTRAIN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ccache_dir=${CCACHE_DIR:-$HOME/.cache/ccache}
[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (debootstrap, mount, chroot)" >&2; exit 2; }

# The root, made once: a half-made one (no marker: debootstrap or the first apt-get failed) is
# removed and made again.
ready=$root/.ddptrain-root-ready
if [[ ! -f $ready ]]; then
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  }
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  echo "== making the Debian root $root ($suite)"
  debootstrap --variant=minbase --components=main,contrib,non-free "$suite" "$root" "$mirror" \
    >"$root.debootstrap.log" 2>&1 || {
    tail -n 20 "$root.debootstrap.log" >&2
    exit 1
  }
  # A machine has /etc/hosts (the installer writes it); debootstrap leaves it out, and only trixie's
  # netbase makes one. The SLURM tests start from it (tests/cluster/cluster.sh).
  [[ -e $root/etc/hosts ]] ||
    printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
      "$(hostname)" >"$root/etc/hosts"
  # dpkg syncs every file it unpacks, which a root that is made again from nothing after a crash
  # does not need: the CPU root's packages took 207 s instead of 238 without the syncs (one run
  # each, alone on the 2-core VM), and in .ci/run that time is taken from the builds beside it.
  echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/ddptrain-unsafe-io"
  # No service may start inside the root (packages' scripts ask policy-rc.d).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  # cuDNN (needed by libtorch-cuda) comes from an installer package whose script downloads it from
  # NVIDIA when the license question is answered "I Agree"; offline that fails the whole install.
  # Declined, the package installs and cuDNN stays absent: see share/dev/ci/libtorch2_cuda.sh.
  echo 'nvidia-cudnn nvidia-cudnn/question select I Decline' |
    chroot "$root" debconf-set-selections
  touch "$ready"
fi

# Mounts, runs CMD, unmounts (also when CMD fails), all inside a mount namespace of its own.
if [[ -z ${DDPTRAIN_DEBIAN13_NAMESPACE:-} ]]; then
  if findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "$0: something is mounted under $root outside this script; unmount it first" >&2
    exit 1
  fi
  DDPTRAIN_DEBIAN13_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$name" "$@"
fi
mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" || umount -R -l "${mounted[i]}"
  done
}
trap unmount_all EXIT
mnt() {  # mnt TARGET MOUNT-ARGS...
  mkdir -p "$1"
  mount "${@:2}" "$1"
  mounted+=("$1")
}
# The root a mount point of its own, as on a machine: else `unshare -m` inside (the SLURM tests)
# fails to make "/" private.
mnt "$root" --bind "$root"
mnt "$root/proc" -t proc proc
mnt "$root/sys" --rbind /sys  # with /sys/fs/cgroup: slurmd 24.11 needs it
mnt "$root/dev" --bind /dev
mnt "$root/dev/pts" --bind /dev/pts
mnt "$root/dev/shm" --bind /dev/shm
# A fresh /tmp for each run, as a machine has after a boot: the root's own /tmp outlived every run
# and kept the session directory of each mpirun a test killed, named by its pid; Open MPI 5's
# mpirun refuses to start when it gets a pid that names one ("prte_session_dir failed ...
# Exists"; pids here wrap at 32768): the CI's disk_full test failed so.
mnt "$root/tmp" -t tmpfs -o mode=1777 tmpfs
mnt "$root$repo" --bind "$repo"
mkdir -p "$ccache_dir"
mnt "$root/root/.cache/ccache" --bind "$ccache_dir"
cp /etc/resolv.conf "$root/etc/resolv.conf"

# A clean environment, plus CI (check.sh's strictness) and the DDPTRAIN_ settings of the caller.
pass=(HOME=/root LANG=C.UTF-8 "TERM=${TERM:-dumb}" CCACHE_DIR=/root/.cache/ccache "CI=${CI:-}"
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
while IFS= read -r -d '' var; do
  [[ $var == DDPTRAIN_* && $var != DDPTRAIN_DEBIAN13_* ]] && pass+=("$var")
done < <(env -0)
status=0
chroot "$root" /usr/bin/env -i "${pass[@]}" /bin/bash -c 'cd "$0" && exec "$@"' "$repo" "$@" ||
  status=$?
exit "$status"
