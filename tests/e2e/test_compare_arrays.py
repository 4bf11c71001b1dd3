#!/usr/bin/python3
"""compare_arrays.py, the comparisons of the tests' h5py checks: a NaN or an infinity anywhere
fails them (where Python's max() and `<` let a NaN through), and what is equal or close passes.
Usage: test_compare_arrays.py"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_arrays import (NotFinite, bit_identical, finite, relative_difference,  # noqa: E402
                            worst, worst_relative_difference)

failures = []


def expect_not_finite(what, call):
    """CALL() must raise NotFinite."""
    try:
        call()
    except NotFinite as e:
        print(f"ok   {what}: {e}")
        return
    except Exception as e:  # noqa: BLE001 (any other outcome is this check's failure)
        failures.append(f"{what}: {type(e).__name__} instead of NotFinite: {e}")
        return
    failures.append(f"{what}: passed")


rng = np.random.default_rng(5)
want = {"a.weight": rng.standard_normal((4, 3)), "b.weight": rng.standard_normal(7)}
close = {k: v * (1 + 1e-7) for k, v in want.items()}
for bad in (math.nan, math.inf):
    # The bad value in the second parameter: max(worst, nan) would keep the first one's difference.
    broken = {k: v.copy() for k, v in close.items()}
    broken["b.weight"][3] = bad
    expect_not_finite(f"worst_relative_difference, {bad} in the compared",
                      lambda: worst_relative_difference(broken, want))
    expect_not_finite(f"worst_relative_difference, {bad} in the reference",
                      lambda: worst_relative_difference(want, broken))
    expect_not_finite(f"relative_difference of scalars, {bad}",
                      lambda: relative_difference("loss", bad, 1.0))
    expect_not_finite(f"worst, {bad} after a finite value", lambda: worst([("x", 1.0), ("y", bad)]))
    expect_not_finite(f"finite, {bad}", lambda: finite("x", np.array([1.0, bad], np.float32)))
    same = {k: v.copy() for k, v in broken.items()}
    problems = bit_identical(broken, same)
    if problems and "not finite" in problems[0]:
        print(f"ok   bit_identical, the same {bad} in both: {problems[0]}")
    else:
        failures.append(f"bit_identical passed the same {bad} in both: {problems}")

value, name = worst_relative_difference(close, want)
if not (0 < value < 1e-6):
    failures.append(f"worst_relative_difference of close arrays: {value} ({name})")
if bit_identical({k: v.copy() for k, v in want.items()}, want):
    failures.append("bit_identical failed equal arrays")
if not bit_identical(close, want):
    failures.append("bit_identical passed different arrays")
if worst([("x", 1.0), ("y", 3.0), ("z", 2.0)]) != (3.0, "y"):
    failures.append("worst does not find the largest")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
