# Sourced by the e2e scripts that train: takes MPIEXEC DDPTRAIN DECK [OPTION...] (options that
# scripts honouring "${extra[@]}" add to every training command), makes a scratch directory
# $work removed on exit, lets Open MPI run as root (CI), and defines fail().
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

# wait_for_file PATH SECONDS: true once PATH exists.
wait_for_file() {
  local deadline=$((SECONDS + $2))
  while [[ ! -e $1 ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# gone_within SECONDS PID...: true once none of the processes exists (zombies count as gone).
gone_within() {
  local deadline=$((SECONDS + $1)) pid state
  shift
  for pid in "$@"; do
    while state=$(ps -o stat= -p "$pid" 2>/dev/null) && [[ $state != Z* ]]; do
      ((SECONDS < deadline)) || { echo "process $pid still there (state $state)"; return 1; }
      sleep 0.1
    done
  done
}
