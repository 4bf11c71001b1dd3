#!/usr/bin/env bash
# ZeRO-1, 2 and 3 checkpoints are ordinary checkpoints (issues 17, 46): each rank writes its shard
# of the optimizer state (ZeRO-3: and of the parameters) into full-size datasets, and a resume reads
# the elements each rank owns now.
# With the same global batch (48 rows per step) and small buckets (blocks cut parameters):
#  - a ZeRO-1 checkpoint of 2 ranks at step 7, resumed on 3 ranks with ZeRO-1, ZeRO-2 and
#    without, continues the 2-rank ZeRO-1 run: losses of steps 8..20 and final parameters within
#    1e-5;
#  - a plain checkpoint of 2 ranks resumed on 3 ranks with ZeRO-1 continues the plain run alike,
#    a ZeRO-2 checkpoint of 2 ranks resumed on 3 with ZeRO-1 the ZeRO-2 run, a ZeRO-3 checkpoint
#    of 2 ranks resumed on 3 with ZeRO-1 the ZeRO-3 run, and on 3 with ZeRO-3 too, and the ZeRO-1
#    checkpoint of 2 ranks resumed on 3 with ZeRO-3 the ZeRO-1 run;
#  - the ZeRO-1, 2 and 3 files have the plain file's datasets, shapes and (within 1e-5)
#    parameters and optimizer moments, read by h5py, and `ddptrain inspect` passes on them.
# Usage: zero_resume.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
common=(--data.samples=500 --train.global_batch=48 --train.steps=20 --checkpoint.every=7
        --log.every=1 --ddp.first_bucket_mb=0.01 --ddp.bucket_mb=0.05)

train() {  # RANKS DIR OPTIONS...
  local ranks=$1 dir=$2
  shift 2
  "$mpiexec" -np "$ranks" --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
    --run.dir="$work/$dir" "$@" >"$work/$dir.txt" 2>&1 || { cat "$work/$dir.txt"; fail "$dir"; }
}
train 2 zero2 --ddp.zero=1
train 2 plain2
train 2 stage2_2 --ddp.zero=2
train 3 zero2_on_zero3 --ddp.zero=1 --train.resume="$work/zero2/checkpoints/step_00000007.h5"
train 3 zero2_on_plain3 --train.resume="$work/zero2/checkpoints/step_00000007.h5"
train 3 zero2_on_stage2_3 --ddp.zero=2 --train.resume="$work/zero2/checkpoints/step_00000007.h5"
train 3 plain2_on_zero3 --ddp.zero=1 --train.resume="$work/plain2/checkpoints/step_00000007.h5"
train 3 stage2_on_zero3 --ddp.zero=1 --train.resume="$work/stage2_2/checkpoints/step_00000007.h5"
train 2 stage3_2 --ddp.zero=3
train 3 stage3_on_zero3 --ddp.zero=1 --train.resume="$work/stage3_2/checkpoints/step_00000007.h5"
train 3 stage3_on_stage3_3 --ddp.zero=3 --train.resume="$work/stage3_2/checkpoints/step_00000007.h5"
train 3 zero2_on_stage3_3 --ddp.zero=3 --train.resume="$work/zero2/checkpoints/step_00000007.h5"
grep -q "ZeRO-1" "$work/zero2.txt" || fail "the ZeRO-1 run's banner does not say ZeRO-1"
grep -q "ZeRO-2" "$work/stage2_2.txt" || fail "the ZeRO-2 run's banner does not say ZeRO-2"
grep -q "ZeRO-3" "$work/stage3_2.txt" || fail "the ZeRO-3 run's banner does not say ZeRO-3"
for run in zero2 stage2_2 stage3_2; do
  "$ddptrain" inspect "$work/$run/checkpoints/step_00000020.h5" >"$work/inspect.txt" 2>&1 ||
    { cat "$work/inspect.txt"; fail "inspect refused the checkpoint of $run"; }
done

/usr/bin/python3 - "$work" <<'PY'
import sys
import h5py
from compare_arrays import NotFinite, datasets, relative_difference, worst, worst_relative_difference

work = sys.argv[1]
failures = []


def losses(run):
    with h5py.File(f"{work}/{run}/metrics.h5", "r") as f:
        return dict(zip(f["train/step"][:].tolist(), f["train/loss"][:].tolist()))


def final(run, group):
    return datasets(f"{work}/{run}/checkpoints/step_00000020.h5", group)


def compare(resumed, reference, what):
    got, want = losses(resumed), losses(reference)
    if sorted(got) != list(range(8, 21)):
        failures.append(f"{resumed}: logged steps {sorted(got)}, not 8..20")
        return
    try:
        loss_rel, _ = worst((f"{resumed}: loss at step {s}", relative_difference(
            f"{resumed}: loss at step {s}", got[s], want[s])) for s in sorted(got))
        param_rel, _ = worst_relative_difference(final(resumed, "model"), final(reference, "model"))
    except NotFinite as e:
        failures.append(f"{what}: {e}")
        return
    print(f"{what}: losses within {loss_rel:.1e}, final parameters within {param_rel:.1e}")
    if not (loss_rel <= 1e-5 and param_rel <= 1e-5):
        failures.append(f"{what} drifted: losses {loss_rel:.2e}, parameters {param_rel:.2e}")


compare("zero2_on_zero3", "zero2", "ZeRO-1 2 ranks -> ZeRO-1 3 ranks")
compare("zero2_on_plain3", "zero2", "ZeRO-1 2 ranks -> plain 3 ranks")
compare("zero2_on_stage2_3", "zero2", "ZeRO-1 2 ranks -> ZeRO-2 3 ranks")
compare("plain2_on_zero3", "plain2", "plain 2 ranks -> ZeRO-1 3 ranks")
compare("stage2_on_zero3", "stage2_2", "ZeRO-2 2 ranks -> ZeRO-1 3 ranks")
compare("stage3_on_zero3", "stage3_2", "ZeRO-3 2 ranks -> ZeRO-1 3 ranks")
compare("stage3_on_stage3_3", "stage3_2", "ZeRO-3 2 ranks -> ZeRO-3 3 ranks")
compare("zero2_on_stage3_3", "zero2", "ZeRO-1 2 ranks -> ZeRO-3 3 ranks")

# Each stage's parameters at step 20 against plain data parallel's: the same training.
for run, stage in (("zero2", "ZeRO-1"), ("stage2_2", "ZeRO-2"), ("stage3_2", "ZeRO-3")):
    try:
        apart, _ = worst_relative_difference(final(run, "model"), final("plain2", "model"))
    except NotFinite as e:
        failures.append(f"{stage} /model: {e}")
        continue
    print(f"/model, {stage} file vs plain file: within {apart:.1e}")
    if not apart <= 1e-5:
        failures.append(f"{stage} parameters differ from plain ones by {apart:.2e}")

plain = final("plain2", "optimizer")
for run, stage in (("zero2", "ZeRO-1"), ("stage2_2", "ZeRO-2"), ("stage3_2", "ZeRO-3")):
    zero = final(run, "optimizer")
    if sorted(zero) != sorted(plain) or any(zero[n].shape != plain[n].shape for n in plain):
        failures.append(f"the {stage} file's /optimizer differs in layout: {sorted(zero)} vs "
                        f"{sorted(plain)}")
        continue
    moments = [n for n in plain if n.endswith("exp_avg") or n.endswith("exp_avg_sq")]
    if not moments:
        failures.append(f"no exp_avg/exp_avg_sq datasets under /optimizer: {sorted(plain)}")
        continue
    try:
        apart, _ = worst_relative_difference({n: zero[n] for n in moments},
                                             {n: plain[n] for n in moments})
        print(f"optimizer moments, {stage} file vs plain file: {len(moments)} datasets within "
              f"{apart:.1e}")
        if not apart <= 1e-5:
            failures.append(f"{stage} moments differ from plain ones by {apart:.2e}")
    except NotFinite as e:
        failures.append(f"{stage} moments: {e}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
PY
echo "ZeRO-1, 2 and 3 checkpoints resume across world sizes, with and without ZeRO"
