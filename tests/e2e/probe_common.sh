# Sourced by the scripts that run a probe of tests/support under mpirun: takes MPIEXEC PROBE, lets
# Open MPI run as root (CI), gives $out (a scratch file for the job's output, removed on exit) and
# fail(), which prints that output.
mpiexec=$1
probe=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() {
  echo "FAIL: $*"
  cat "$out"
  exit 1
}
