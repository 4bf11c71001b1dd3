# Sourced by the e2e scripts that train: takes MPIEXEC DDPTRAIN DECK, makes a scratch directory
# $work removed on exit, lets Open MPI run as root (CI), and defines fail().
mpiexec=$1
ddptrain=$2
deck=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() {
  echo "FAIL: $*"
  exit 1
}
