#!/usr/bin/env bash
# Rank-count invariance with the same global batch, across epoch boundaries (500 samples, 48 per
# step: an epoch is 10 steps, and the runs go to step 20):
#  - a checkpoint written by 2 ranks at step 7, resumed on 3 ranks, continues the 2-rank run: its
#    first losses (steps 8, 9, 10) equal the 2-rank run's within 1e-5 and differ from the first
#    losses of a fresh run (so a resume that silently started afresh fails), and its final
#    parameters are within 1e-5 (relative, per parameter) of the 2-rank run's;
#  - a fresh 3-rank run ends within 1e-5 of the fresh 2-rank run.
# Compared with h5py on metrics.h5 and the final checkpoints (a reader ddptrain did not write).
# Usage: resharded_resume.sh MPIEXEC DDPTRAIN DECK
set -euo pipefail
source "$(dirname "$0")/common.sh"
common=(--data.samples=500 --train.global_batch=48 --train.steps=20 --checkpoint.every=7
        --log.every=1)

"$mpiexec" -np 2 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
  --run.dir="$work/two" >/dev/null
"$mpiexec" -np 3 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
  --run.dir="$work/three" --train.resume="$work/two/checkpoints/step_00000007.h5" >"$work/three.txt"
"$mpiexec" -np 3 --oversubscribe "$ddptrain" train "$deck" "${common[@]}" \
  --run.dir="$work/fresh3" >/dev/null
grep -q "16 per rank" <(grep -m1 "batch" "$work/three.txt") || fail "3 ranks did not take 16 rows each"
/usr/bin/python3 - "$work" <<'PY'
import sys
import h5py
from compare_arrays import NotFinite, datasets, finite, worst_relative_difference

work = sys.argv[1]


def losses(run):
    with h5py.File(f"{work}/{run}/metrics.h5", "r") as f:
        return dict(zip(f["train/step"][:].tolist(), f["train/loss"][:].tolist())), f["train/epoch"][:]


def final_difference(a, b, sizes):
    """Max over parameters of ||b - a|| / ||a|| at step 20; NotFinite where one is not finite."""
    x, y = (f"{work}/{run}/checkpoints/step_00000020.h5" for run in (a, b))
    with h5py.File(x, "r") as fx, h5py.File(y, "r") as fy:
        assert (fx.attrs["world_size"], fy.attrs["world_size"]) == sizes, "world sizes"
        assert fx.attrs["step"] == fy.attrs["step"] == 20, "steps"
    return worst_relative_difference(datasets(y), datasets(x))[0]


two, epochs = losses("two")
three, _ = losses("three")
fresh, _ = losses("fresh3")
assert epochs.max() >= 1, f"the runs never crossed an epoch boundary: epochs {epochs}"
assert sorted(three) == list(range(8, 21)), f"resumed run logged steps {sorted(three)}, not 8..20"
failures = []
for k, step in enumerate((8, 9, 10)):
    finite(f"losses at step {step}", [three[step], two[step], fresh[1 + k]])
    rel = abs(three[step] - two[step]) / abs(two[step])
    away = abs(three[step] - fresh[1 + k]) / abs(fresh[1 + k])
    print(f"step {step}: resumed 3-rank {three[step]:.7f}, 2-rank {two[step]:.7f} (rel {rel:.1e}); "
          f"fresh run's step {1 + k}: {fresh[1 + k]:.7f} (rel {away:.1e})")
    if not rel <= 1e-5:
        failures.append(f"step {step}: resumed loss differs from the 2-rank run by {rel:.2e}")
    if not away > 1e-3:
        failures.append(f"step {step}: resumed loss is that of a fresh run ({away:.2e})")
try:
    resumed = final_difference("two", "three", (2, 3))
    invariant = final_difference("two", "fresh3", (2, 3))
except NotFinite as e:
    sys.exit(f"FAIL: final parameters: {e}")
print(f"final parameters: resharded 3-rank vs 2-rank {resumed:.2e}; fresh 3-rank vs 2-rank "
      f"{invariant:.2e}")
if not resumed < 1e-5:
    failures.append(f"resharded resume ends {resumed:.2e} away from the 2-rank run")
if not invariant < 1e-5:
    failures.append(f"3 ranks end {invariant:.2e} away from 2 ranks across epoch boundaries")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
PY
echo "resharded resume and epoch-boundary invariance ok"
