#!/bin/bash
# DDPTRAIN_BIN of restart_in_allocation.sh: each task of each launch (job step) first appends
# "$SLURM_STEP_ID $SLURMD_NODENAME $SLURM_PROCID" to $NOTED_DIR/launches-$SLURM_JOB_ID.txt, so the
# test sees where each launch really ran; then runs $NOTED_DDPTRAIN, or does what the case asks
# (set in sbatch's environment, which reaches every task):
#   CASE_FAIL=first|all  every task of the first launch / of every launch exits 5 (a collective
#                        timed out, a peer lost) instead of training, once every task of the
#                        launch has noted itself (srun ends the others as soon as one exits)
#   CASE_HOLD_MS=MS      in the first launch, rank 3 sleeps MS at the end of each checkpoint write
#                        (the test hook DDPTRAIN_TEST_SLOW_PHASES=3:MS)
set -eu
readonly kRetryable=5
notes=$NOTED_DIR/launches-$SLURM_JOB_ID.txt
echo "$SLURM_STEP_ID $SLURMD_NODENAME $SLURM_PROCID" >>"$notes"

# fail_with CODE: exits CODE once every task of this launch has noted itself (at most 60 s).
fail_with() {
  local i
  for ((i = 0; i < 600; i++)); do
    (($(grep -c "^$SLURM_STEP_ID " "$notes") >= SLURM_NTASKS)) && break
    sleep 0.1
  done
  exit "$1"
}

case ${CASE_FAIL:-} in
  first) ((SLURM_STEP_ID > 0)) || fail_with "$kRetryable" ;;
  all) fail_with "$kRetryable" ;;
  '') ;;
  *) echo "CASE_FAIL=$CASE_FAIL: first or all" >&2 && exit 1 ;;
esac
if [[ -n ${CASE_HOLD_MS:-} ]] && ((SLURM_STEP_ID == 0)); then
  export DDPTRAIN_TEST_SLOW_PHASES=3:$CASE_HOLD_MS
fi
exec "$NOTED_DDPTRAIN" "$@"
