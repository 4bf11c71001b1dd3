#!/usr/bin/env bash
# A model too large for one rank's memory limit without ZeRO ends before its first step with
# exit 6, naming what it needs, the limit, and the lowest ddp.zero level whose need fits; with
# ddp.zero = 2 the same model holds under a third of its gradients per rank; a model as large in
# more layers, refused alike without ZeRO, trains with ddp.zero = 3 under the same limit.
# The limit is each rank's own: `prlimit --data` (RLIMIT_DATA: private writable memory; Open MPI's
# shared-memory segments and ZeRO's shared copy of the parameters are not in it), set on each rank.
# The MLP 64 -> 2500 x 5 -> 10 (25.2M parameters) with AdamW needs per rank, by ddptrain's
# estimate (a lower bound: weights, gradients, moments): 384 MiB without ZeRO, 240 MiB with ZeRO-1,
# 168 MiB with ZeRO-2 at 4 ranks. What a rank has mapped before that depends on the machine, so a
# first run reads it from the message ("a rank has about X MiB" under a known limit), and the
# limit is set to leave 330 MiB.
# Not asserted: that the ZeRO-2 run also trains under that limit. It did on Debian 12 (LibTorch
# 1.13: with 300 MiB left, not with 235) but not on Debian 13 even with 380 MiB left (LibTorch 2.6
# maps more after the check), so the ZeRO-2 run here has no limit.
# Usage: zero_fits_memory.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
model=(--data.samples=512 --train.steps=3 --log.every=1 --ddp.bucket_mb=8)

run() {  # LIMIT_MIB|unlimited NAME OPTIONS...: 4 ranks, each under the limit; sets $rc
  local limit=$1 name=$2
  shift 2
  set +e
  local bytes=unlimited
  [[ $limit == unlimited ]] || bytes=$((limit * 1048576))
  "$mpiexec" -np 4 --oversubscribe bash -c 'prlimit --data='"$bytes"' "$@"' bash "$ddptrain" \
    train "$deck" "${model[@]}" --run.dir="$work/$name" "$@" >"$work/$name.txt" 2>&1
  rc=$?
  set -e
}

probe_limit=1200
run $probe_limit probe --ddp.zero=0 --model.hidden=50000,50000
had=$(grep -o 'a rank has about [0-9.]* MiB' "$work/probe.txt" | grep -o '[0-9.]*' | head -1) ||
  { cat "$work/probe.txt"; fail "the probe's refusal does not say what a rank has"; }
mapped=$(python3 -c "print(round($probe_limit - $had))")
limit=$((mapped + 330))
echo "each rank had mapped about $mapped MiB of private memory; limit $limit MiB (330 MiB left)"

run $limit plain --ddp.zero=0 --model.hidden=2500,2500,2500,2500,2500
[[ $rc -eq 6 ]] || { cat "$work/plain.txt"; fail "without ZeRO: exit $rc, expected 6"; }
message=$(grep "error:" "$work/plain.txt" | head -1)
expect_message "at least 385 MiB per rank" "RLIMIT_DATA" "with ddp.zero = 1 it needs 240 MiB per rank" \
  "set ddp.zero = 1"
[[ ! -e "$work/plain/metrics.h5" ]] || fail "the refused run wrote metrics"

run unlimited zero2 --ddp.zero=2 --model.hidden=2500,2500,2500,2500,2500
[[ $rc -eq 0 ]] || { cat "$work/zero2.txt"; fail "ZeRO-2: exit $rc"; }
grep -q "ZeRO-2" "$work/zero2.txt" || fail "the ZeRO-2 run's banner does not say ZeRO-2"
grep "memory  " "$work/zero2.txt"
# Gradients held under a third of the parameters' bytes (a quarter is the shard; each 25 MB weight
# is a bucket of its own, reduced from backward's gradient, so the pool holds only small buckets).
/usr/bin/python3 - "$work/zero2.txt" <<'PY' || fail "ZeRO-2 held too much gradient memory"
import re, sys
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
line = [l for l in open(sys.argv[1]) if re.match(r"\s+memory\s+: parameters .* peak", l)][-1]
p_value, p_unit, g_value, g_unit = re.search(
    r"parameters ([\d.]+) (\w+), gradients ([\d.]+) (\w+)", line).groups()
params, grads = float(p_value) * units[p_unit], float(g_value) * units[g_unit]
print(f"gradients held {grads / 2**20:.1f} MiB = {grads / params:.2f} of the parameters' bytes")
sys.exit(0 if grads < params / 3 else 1)
PY

# ZeRO-3 under the same limit, on a model as large made of 25 layers of 1000 (24.1M parameters,
# 386 MB with AdamW: refused without ZeRO): each rank keeps a quarter of the weights, gradients
# and moments, and two layers whole while they run. (On the 4 layers of 2500 above it does not
# fit: a layer is a quarter of that model, and two are gathered at a time.) With
# ddp.shared_memory = false: gathered through MPI into each rank's own memory, the units count
# against each rank's limit (on one node they would otherwise be gathered into one node-shared
# copy, which RLIMIT_DATA leaves out).
deep=$(printf '1000,%.0s' {1..25})
deep=${deep%,}
run $limit deep_plain --ddp.zero=0 --model.hidden="$deep"
[[ $rc -eq 6 ]] || { cat "$work/deep_plain.txt"; fail "25 layers without ZeRO: exit $rc, expected 6"; }
run $limit deep_zero3 --ddp.zero=3 --ddp.shared_memory=false --model.hidden="$deep"
[[ $rc -eq 0 ]] || { cat "$work/deep_zero3.txt"; fail "ZeRO-3 under the $limit MiB limit: exit $rc"; }
grep -q "ZeRO-3" "$work/deep_zero3.txt" || fail "the ZeRO-3 run's banner does not say ZeRO-3"
grep "memory  " "$work/deep_zero3.txt"
echo "without ZeRO refused with exit 6 naming ddp.zero = 1; ZeRO-2 holds a quarter of the gradients;"
echo "a model refused without ZeRO trains with ZeRO-3 under the same limit"
