# Sourced by the e2e scripts that train: takes MPIEXEC DDPTRAIN DECK [OPTION...] (options that
# scripts honouring "${extra[@]}" add to every training command), makes a scratch directory
# $work removed on exit, lets Open MPI run as root (CI), puts tests/e2e on PYTHONPATH, and defines
# fail().
mpiexec=$1
ddptrain=$2
deck=$3
extra=("${@:4}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The script's processes keep their temporary files in $work, removed with it: a session directory
# that a killed mpirun leaves behind names its pid, and Open MPI 5's mpirun refuses to start when a
# later one gets that pid back ("prte_session_dir failed ... Exists").
mkdir "$work/tmp" && export TMPDIR=$work/tmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The scripts' Python checks import compare_arrays.py (comparisons a NaN cannot pass) from here.
PYTHONPATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
fail() {
  echo "FAIL: $*"
  exit 1
}
# expect_message TEXT...: each TEXT is in $message (a job's error line, set by the script).
expect_message() {
  local text
  for text in "$@"; do
    [[ $message == *"$text"* ]] || fail "the error line does not say '$text': $message"
  done
}

# rank_pid MPIRUN_PID RANK: the pid of that rank among mpirun's children (local launch).
rank_pid() {
  local pid
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

# wait_guarded PID SECONDS: waits for PID (a background job of this shell) and sets rc to its exit
# code; false if it was still running after SECONDS, and was killed then, with its children (the
# ranks of a local mpirun). A hang guard, not a bound on the time. (The guard's output goes
# nowhere, so a guard left sleeping holds no pipe of ctest's.)
wait_guarded() {
  local marker=$work/guard_fired.$1
  (
    exec >/dev/null 2>&1
    sleep "$2" && touch "$marker" && pkill -KILL -P "$1"
    kill -KILL "$1"
  ) &
  local guard=$!
  wait "$1"
  rc=$?
  kill "$guard" 2>/dev/null
  [[ ! -e $marker ]]
}

# wait_for_file PATH SECONDS: true once PATH exists.
wait_for_file() {
  local deadline=$((SECONDS + $2))
  while [[ ! -e $1 ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# gone_within SECONDS PID...: true once none of the processes exists (zombies count as gone);
# false for an empty PID (a lookup that found nothing), which ps would report as gone.
gone_within() {
  local deadline=$((SECONDS + $1)) pid state
  shift
  for pid in "$@"; do
    [[ -n $pid ]] || { echo "gone_within: an empty pid"; return 1; }
    while state=$(ps -o stat= -p "$pid" 2>/dev/null) && [[ $state != Z* ]]; do
      ((SECONDS < deadline)) || { echo "process $pid still there (state $state)"; return 1; }
      sleep 0.1
    done
  done
}

# require_root WHAT: exits 77 (skipped; ctest's SKIP_RETURN_CODE) unless root, saying that WHAT
# needs root; for the tests that mount file systems (label root).
require_root() {
  [[ $(id -u) -eq 0 ]] || { echo "SKIP: $1 needs root"; exit 77; }
}

# small_dev_shm COMMAND...: COMMAND with a /dev/shm of 512 KiB, a tmpfs mounted in a mount
# namespace of its own (root only). Open MPI keeps its own shared-memory files in /dev/shm too:
# they go to $work here (its btl is "vader" in Open MPI 4, "sm" in 5).
small_dev_shm() {
  OMPI_MCA_btl_vader_backing_directory=$work OMPI_MCA_btl_sm_backing_directory=$work \
    unshare --mount --propagation private bash -c \
    'mount -t tmpfs -o size=512k tmpfs /dev/shm && exec "$@"' small_dev_shm "$@"
}
