# Sourced by the tests/cluster/*.sh tests: a private, throw-away SLURM cluster on loopback.
#
#   cluster_start one|two|three   munged + slurmctld + slurmd, one node "n1" or two or three
#                                 emulated nodes
#                           "n1"/"n2" (own UTS namespaces, 127.0.0.2/127.0.0.3), waits until idle
#   cluster_job TIMEOUT_S SBATCH_ARGS...
#                           submits with sbatch, polls squeue every 0.2 s until the job has ended
#                           (a requeued job is followed through to its final state); sets JOB_ID
#                           and JOB_STATE; or in two: cluster_submit SBATCH_ARGS... (JOB_ID), then
#                           cluster_wait TIMEOUT_S (JOB_STATE)
#   job_field JOB_ID NAME   a field of `scontrol show job` (JobState, ExitCode, Restarts, ...)
#   skip REASON / fail MESSAGE
#
# Everything lives in one temp dir $cluster (config, state, spool, logs, sockets, pid files, and
# $work for the tests' own files), with ports probed free per run, so two runs never share a path
# or port. Nothing is installed here (share/dev/setup.sh does that). Only a machine that
# cannot run SLURM (not root; a tool, the munge key or user munge missing) makes the test exit 77,
# which ctest reports as skipped; a daemon that does not start or a node that does not come up
# idle fails it. The EXIT trap cancels our jobs and stops every daemon we started by the PID in
# its pid file, never by name.
#
# Written against Debian 12's SLURM 22.05.8, munge 0.5.15, Open MPI 4.1.4 and Lmod 8.6.

readonly kSkip=77                   # ctest SKIP_RETURN_CODE
readonly kPollS=0.2                 # sbatch --wait polls every ~10 s; squeue at 0.2 s ends in ~1 s
readonly kDaemonStartS=30           # the daemons are up in well under a second; slack for load
readonly kShutdownS=20              # KillWait (5 s here) plus the epilog of cancelled jobs
# A requeued job waits AuthInfo=cred_expire seconds (default 120) + 1 before it may start again
# (the slurmd still holds the revoked credential of its last run under the same job id), then for
# the next scheduler pass: sched_interval/bf_interval (defaults 60/30 s, 1 s here). 5 is SLURM's
# minimum (smaller values are refused with "AuthInfo=cred_expire=N invalid"). With these, ~7 s.
readonly kCredExpireS=5

skip() {
  echo "SKIP: $*"
  exit "$kSkip"
}

fail() {
  echo "FAIL: $*"
  exit 1
}

# The daemons need root (SlurmUser=root, munged started as user munge) and the Debian packages.
# With Lmod's check in lmod_two_nodes.sh, the only reason a cluster test may skip.
cluster_check_machine() {
  [[ $(id -u) -eq 0 ]] || skip "the SLURM daemons need root (running as $(id -un))"
  local tool
  for tool in munged slurmctld slurmd sbatch srun squeue sinfo scontrol scancel unshare runuser; do
    command -v "$tool" >/dev/null ||
      skip "$tool not found (share/dev/setup.sh installs SLURM + munge)"
  done
  [[ -r /etc/munge/munge.key ]] || skip "no /etc/munge/munge.key (package munge not configured)"
  getent passwd munge >/dev/null || skip "no user munge"
}

# A TCP port nothing listens on now (slurmd binds the wildcard address, so one probe suffices),
# below the kernel's ephemeral range: a port in that range can be taken at any moment as the
# source port of some outgoing connection (seen: slurmctld "Address already in use" while apt
# downloaded), which a probe cannot see.
_free_port() {
  local port low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  ((low > 12000)) || low=32768  # a range lowered this far: fall back to the usual one's floor
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  echo "$port"
}

# _node_count one|two|three: the emulated nodes of a shape.
_node_count() {
  case $1 in
    one) echo 1 ;;
    two) echo 2 ;;
    three) echo 3 ;;
    *) fail "cluster shape '$1': one, two or three" ;;
  esac
}

_write_slurm_conf() {
  local shape=$1 ctld_port=$2
  local host
  host=$(hostname -s)
  cat >"$cluster/slurm.conf" <<EOF
ClusterName=ddptest
# Job ids differ between runs: Open MPI names its shared-memory segments after host and job id,
# and two clusters' job 1 on their nodes "n1" would otherwise share them.
FirstJobId=$((1000 + (RANDOM << 8 | RANDOM % 256) % 1000000))
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster/munge/munge.socket,cred_expire=$kCredExpireS
StateSaveLocation=$cluster/state
SlurmctldPidFile=$cluster/run/slurmctld.pid
SlurmdPidFile=$cluster/run/slurmd-%n.pid
SlurmdSpoolDir=$cluster/spool/%n
TmpFS=$cluster/tmpfs/%n
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=pmix
# batch_sched_delay=0: else each batch job waits ~3 s. sched_interval, bf_interval: a requeued job
# starts as soon as it is eligible instead of at the next pass, up to 60 s later.
SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1
# An oversized request fails at once instead of pending forever.
EnforcePartLimits=ALL
ReturnToService=2
KillWait=5
# No slurmdbd, so no sacct: ended jobs stay in scontrol/squeue this long for the checks.
MinJobAge=600
# The daemons share the cores with the job, which a production cluster does not do, and Linux
# 6.18 with autogroup (EEVDF group scheduling) lets ranks that spin in MPI in a session of their
# own (as srun starts them) keep processes of other sessions off the cores for seconds: a
# "sleep 0.1" loop measured here woke up to 10 s late beside 2 ranks on 2 cores (16 s when the
# ranks yield in a loop, mpi_yield_when_idle = 1), and squeue failed with "Socket timed out"
# after the default MessageTimeout of 10 s. 60 s rides that out.
MessageTimeout=60
EOF
  # RealMemory well under the machine's, else slurmd drains the node as "Low RealMemory".
  local node_line="NodeHostname=$host CPUs=2 RealMemory=4000"
  if [[ $shape == one ]]; then
    echo "NodeName=n1 NodeAddr=127.0.0.1 Port=$(_free_port) $node_line" >>"$cluster/slurm.conf"
    echo "PartitionName=debug Nodes=n1 Default=YES State=UP" >>"$cluster/slurm.conf"
  else
    local n names=()
    for n in $(seq "$(_node_count "$shape")"); do
      echo "NodeName=n$n NodeAddr=127.0.0.$((n + 1)) Port=$(_free_port) $node_line" \
        >>"$cluster/slurm.conf"
      names+=("n$n")
    done
    echo "PartitionName=debug Nodes=$(IFS=,; echo "${names[*]}") Default=YES State=UP" \
      >>"$cluster/slurm.conf"
  fi
}

# The daemons run in the foreground as children of the test (-D/-F, output in their own logs), so
# that even a test killed by ctest's timeout takes them along (ctest kills the whole process tree;
# daemonized ones would be reparented out of it and live on).
_start_munge() {
  # munged refuses sockets in directories that are not its own or not traversable by everyone.
  mkdir -p "$cluster/munge"
  chown munge:munge "$cluster/munge"
  chmod 755 "$cluster" "$cluster/munge"
  runuser -u munge -- munged --foreground --socket="$cluster/munge/munge.socket" \
    --pid-file="$cluster/munge/munged.pid" --log-file="$cluster/munge/munged.log" \
    --seed-file="$cluster/munge/munged.seed" >"$cluster/log/munged.out" 2>&1 &
  _wait_for "[[ -S '$cluster/munge/munge.socket' ]]" "$!" ||
    fail "munged did not start: $(_last_words munged.out ../munge/munged.log)"
}

# _wait_for CONDITION PID: polls CONDITION until it holds (0), PID has exited or kDaemonStartS
# passed (1). The PID first: SLURM clients take seconds to give up on a daemon that is gone.
_wait_for() {
  local condition=$1 pid=$2 i
  for ((i = 0; i < kDaemonStartS * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    eval "$condition" && return 0
    sleep 0.1
  done
  return 1
}

# _last_words FILE...: the last line of the first of these files (under $cluster/log) that has one.
_last_words() {
  local file
  for file; do
    [[ -s $cluster/log/$file ]] && tail -n 1 "$cluster/log/$file" && return 0
  done
  echo "no message"
}

# Stops the daemons whose pid files are given: SIGTERM to all at once (each takes 1-2 s to go),
# SIGKILL to any still there after kShutdownS.
_stop_by_pid_files() {
  local pids=() file pid i alive
  for file in "$@"; do
    [[ -s $file ]] && pid=$(<"$file") && kill "$pid" 2>/dev/null && pids+=("$pid")
  done
  for ((i = 0; i < kShutdownS * 10; i++)); do
    alive=
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1 && break; done
    [[ -z $alive ]] && return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

cluster_stop() {
  local rc=$? i ctld_pid jobs
  trap - EXIT
  set +e
  if ((rc != 0 && rc != kSkip)) && [[ -n ${cluster_up:-} ]]; then
    # A daemon that did not start may have left no log.
    if [[ -f $cluster/log/slurmctld.log ]]; then
      echo "--- slurmctld log (tail) ---"
      tail -n 15 "$cluster/log/slurmctld.log"
    fi
    for i in "$cluster"/log/slurmd-*.log; do
      [[ -f $i ]] || continue
      echo "--- $(basename "$i") (tail) ---"
      tail -n 10 "$i"
    done
  fi
  ctld_pid=$(cat "$cluster/run/slurmctld.pid" 2>/dev/null)
  if [[ -n $ctld_pid ]] && kill -0 "$ctld_pid" 2>/dev/null; then
    # Jobs first: with proctrack/linuxproc, a stopped slurmd would leave its job steps running.
    mapfile -t jobs < <(squeue -h -o %i 2>/dev/null)
    ((${#jobs[@]} == 0)) || scancel --quiet --full "${jobs[@]}"
    for ((i = 0; i < kShutdownS * 5; i++)); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep "$kPollS"
    done
  fi
  _stop_by_pid_files "$cluster"/run/slurmd-*.pid "$cluster/run/slurmctld.pid" \
    "$cluster/munge/munged.pid"
  rm -rf "$cluster"
  exit "$rc"
}

# cluster_start one|two|three: a running cluster, SLURM_CONF exported for the clients.
cluster_start() {
  local shape=$1 nodes node
  cluster_check_machine
  cluster=$(mktemp -d /tmp/ddptrain-slurm.XXXXXX)
  work=$cluster/work
  trap cluster_stop EXIT
  trap 'exit 130' INT # so that Ctrl-C and kill run the EXIT trap too
  trap 'exit 143' TERM
  mkdir -p "$cluster"/{state,run,log,spool,tmpfs} "$work"
  local n
  nodes=()
  for n in $(seq "$(_node_count "$shape")"); do nodes+=("n$n"); done
  for node in "${nodes[@]}"; do mkdir -p "$cluster/tmpfs/$node" "$cluster/spool/$node"; done
  _start_munge
  _write_slurm_conf "$shape" "$(_free_port)"
  export SLURM_CONF=$cluster/slurm.conf
  # Open MPI between emulated nodes: loopback only (never any other address of this machine).
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Open MPI's session directories (and anything else temporary) go away with the cluster.
  mkdir -p "$cluster/tmp"
  export TMPDIR=$cluster/tmp
  cluster_up=1

  # The emulated nodes' names resolve to their addresses in every daemon (and what it starts):
  # SLURM 24.11 answers an srun at the host name its node reports ("n1"), which nothing else
  # resolves. A hosts file of the cluster's own, mounted over /etc/hosts in each daemon's mount
  # namespace only.
  cp /etc/hosts "$cluster/hosts"
  if [[ $shape != one ]]; then
    for n in "${!nodes[@]}"; do printf '127.0.0.%d %s\n' $((n + 2)) "${nodes[n]}"; done
  fi >>"$cluster/hosts"
  local with_hosts="mount --bind '$cluster/hosts' /etc/hosts &&"
  unshare --mount -- sh -c "$with_hosts exec slurmctld -D -i -f '$SLURM_CONF'" \
    >"$cluster/log/slurmctld.out" 2>&1 &
  _wait_for "scontrol ping 2>/dev/null | grep -q UP" "$!" ||
    fail "slurmctld did not start: $(_last_words slurmctld.out slurmctld.log)"
  for node in "${nodes[@]}"; do
    if [[ $shape == one ]]; then
      unshare --mount -- sh -c "$with_hosts exec slurmd -D -N $node -f '$SLURM_CONF'" \
        >"$cluster/log/slurmd-$node.out" 2>&1 &
    else
      # Each emulated node needs its own hostname: Open MPI names its shared-memory files after
      # the host, and two "nodes" with one name crash MPI_Allreduce.
      unshare --uts --mount -- \
        sh -c "$with_hosts hostname $node && exec slurmd -D -N $node -f '$SLURM_CONF'" \
        >"$cluster/log/slurmd-$node.out" 2>&1 &
    fi
    _wait_for "[[ -s '$cluster/run/slurmd-$node.pid' ]]" "$!" ||
      fail "slurmd -N $node did not start: $(_last_words "slurmd-$node.out" "slurmd-$node.log")"
  done

  local states i
  for ((i = 0; i < kDaemonStartS * 5; i++)); do
    states=$(sinfo -h -N -o '%N=%T' 2>/dev/null | sort -u | tr '\n' ' ')
    local idle=1
    for node in "${nodes[@]}"; do [[ $states == *"$node=idle "* ]] || idle=0; done
    ((idle)) && return 0
    sleep "$kPollS"
  done
  fail "SLURM nodes not idle after ${kDaemonStartS} s: ${states:-slurmctld not answering}"
}

# job_field JOB_ID NAME: one KEY=VALUE field of `scontrol show job -o`.
job_field() {
  scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# cluster_job TIMEOUT_S SBATCH_ARGS...: submit and wait until the job reached a final state.
# Sets JOB_ID and JOB_STATE. Exits the test (fail) if the job outlives TIMEOUT_S.
cluster_job() {
  local timeout_s=$1
  shift
  cluster_submit "$@"
  cluster_wait "$timeout_s"
}
# cluster_submit SBATCH_ARGS...: submits, sets JOB_ID, returns at once.
cluster_submit() {
  JOB_ID=$(sbatch --parsable "$@") || fail "sbatch $*"
  JOB_ID=${JOB_ID%%;*}
}
# cluster_wait TIMEOUT_S: waits for job JOB_ID to end; sets JOB_STATE.
cluster_wait() {
  local timeout_s=$1 i state
  for ((i = 0; i < timeout_s * 5; i++)); do
    # -t all: ended jobs stay listed (for MinJobAge) instead of vanishing.
    state=$(squeue -h -t all -j"$JOB_ID" -o %T)
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | \
        DEADLINE | PREEMPTED)
        # shellcheck disable=SC2034 # read by the tests
        JOB_STATE=$state
        return 0
        ;;
    esac
    sleep "$kPollS"
  done
  fail "job $JOB_ID still ${state:-unknown} after $timeout_s s"
}
