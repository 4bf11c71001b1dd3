"""Comparisons for the tests' h5py checks in which a NaN or an infinity cannot pass.

Written the usual way, a check lets a NaN through: Python's max(worst, nan) keeps worst, and
nan > limit is False, so "the worst difference is within the limit" passes a parameter that became
NaN. Here every value compared must be finite: one that is not raises NotFinite (an
AssertionError) naming it, and the script fails with that line.

The e2e scripts' heredocs import it as `from compare_arrays import ...` (common.sh puts tests/e2e
on PYTHONPATH); a script elsewhere adds tests/e2e to sys.path itself."""
import h5py
import numpy as np


class NotFinite(AssertionError):
    """A compared value is NaN or infinite."""


def finite(name, value):
    """VALUE (an array or a number) when every element of it is finite; NotFinite naming NAME
    otherwise. Integers and strings are finite by definition."""
    array = np.asarray(value)
    if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise NotFinite(f"{name}: {bad} of {array.size} value(s) not finite (NaN or infinity)")
    return value


def worst(pairs):
    """The largest value of (name, value) pairs, as (value, name); NotFinite on the first value
    that is not finite (where max() would skip a NaN), AssertionError when there are none."""
    found = None
    for name, value in pairs:
        finite(name, value)
        if found is None or value > found[0]:
            found = (float(value), name)
    assert found is not None, "nothing to compare"
    return found


def relative_difference(name, got, want):
    """||got - want|| / ||want|| in float64: both finite, of the same shape, want not all zero."""
    got = np.asarray(finite(f"{name} (compared)", got), dtype=np.float64)
    want = np.asarray(finite(f"{name} (reference)", want), dtype=np.float64)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, reference {want.shape}"
    scale = np.linalg.norm(want)
    assert scale > 0, f"{name}: the reference is all zero (no relative difference)"
    return finite(f"{name} (relative difference)", float(np.linalg.norm(got - want) / scale))


def worst_relative_difference(got, want):
    """The largest relative_difference over two dicts {name: array} holding the same names, as
    (value, name)."""
    assert sorted(got) == sorted(want), f"different names: {sorted(got)} vs {sorted(want)}"
    return worst((n, relative_difference(n, got[n], want[n])) for n in sorted(want))


def datasets(path, group="model"):
    """Every dataset under GROUP of the HDF5 file PATH, {name relative to GROUP: array}; one at
    least."""
    found = {}
    with h5py.File(path, "r") as f:
        f[group].visititems(
            lambda name, obj: found.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset)
            else None)
    assert found, f"no datasets under /{group} in {path}"
    return found


def bit_identical(got, want):
    """Problems (a list of lines, empty when none) of two dicts {name: array} that must hold the
    same names with the same dtypes, shapes and bytes, every value finite."""
    if sorted(got) != sorted(want):
        return [f"different names: {sorted(got)} vs {sorted(want)}"]
    problems = []
    for name in sorted(want):
        a, b = np.asarray(got[name]), np.asarray(want[name])
        try:
            finite(name, a)
            finite(f"{name} (reference)", b)
        except NotFinite as e:
            problems.append(str(e))
            continue
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append(f"{name}: {a.shape} {a.dtype}, reference {b.shape} {b.dtype}")
        elif a.tobytes() != b.tobytes():
            problems.append(f"{name}: {int(np.count_nonzero(a != b))} of {a.size} values differ")
    return problems
