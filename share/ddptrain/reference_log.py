#!/usr/bin/python3
"""Reference logs of the input decks: what a run of inputs/DECK.cfg should print, without timings.

  reference_log.py write RUN_DIR DECK_NAME RANKS [--tolerance LINE] > DECK_NAME.npRANKS.csv
  reference_log.py compare RUN_DIR REFERENCE.csv [--rtol R] [--atol A]
  reference_log.py diff RUN_DIR REFERENCE.csv

`write` turns a run's metrics.h5 into CSV rows `series,step,value`: the training loss of every
logged step (series train) and the validation loss of every evaluation (series eval), after two
comment lines: what the file is, and its tolerance line (--tolerance, see below).
`compare` checks that every row of a (possibly shortened) run equals the reference's row of the
same series and step within |run - reference| <= atol + rtol x |reference|, and that the run
logged at least one row; it exits 1 with a table of the differences otherwise.
`diff` prints, per row of the run, `series step run reference |run - reference| / |reference|`
(tab-separated), for share/dev/deck_spread.sh.

Why a tolerance and not equality: the reference is written on one machine; another CPU picks
other kernels (OpenBLAS core type, LibTorch's vector width, oneDNN's instruction set, the thread
count), which round differently, and training amplifies those roundings. A deck is
deterministic for a given machine, rank count and thread count: on the machine that wrote the
reference the difference is zero (to the 9 digits written).

The tolerance is the reference's own, measured. Its second line reads
  # tolerance rtol=R atol=A: why
or, where early rows are held tighter than later ones,
  # tolerance rtol=R1 through step S1, rtol=R2 through step S2, rtol=R3 after, atol=A: why
(a row of step <= S1 gets R1, one of step <= S2 gets R2, later rows the last rtol). The numbers
are a safety factor times the largest relative difference that share/dev/deck_spread.sh
measured over the kernel settings of share/dev/kernel_settings.sh, on the rows the tests
compare; `why` says which. --rtol (for every row) and --atol on the command line override them.
Needs Debian's python3-h5py (/usr/bin/python3).
"""
import argparse
import csv
import os
import re
import sys

import h5py


def rows_of(run_dir: str) -> list:
    with h5py.File(os.path.join(run_dir, "metrics.h5"), "r", swmr=True) as f:
        rows = [("train", int(s), float(v)) for s, v in zip(f["train/step"][:], f["train/loss"][:])]
        if "eval" in f and "step" in f["eval"]:
            rows += [("eval", int(s), float(v)) for s, v in zip(f["eval/step"][:], f["eval/loss"][:])]
    return rows


class Tolerance:
    """A reference's tolerance: an rtol per range of steps (tiers) and one atol."""

    def __init__(self, tiers: list, atol: float, why: str):
        self.tiers = tiers  # [(last step, or None for every later step, rtol)], steps ascending
        self.atol = atol
        self.why = why

    def rtol(self, step: int) -> float:
        for last, rtol in self.tiers:
            if last is None or step <= last:
                return rtol
        return self.tiers[-1][1]

    def __str__(self) -> str:
        def tier(last, rtol):
            if last is not None:
                return f"rtol {rtol:g} through step {last}"
            return f"rtol {rtol:g} after" if len(self.tiers) > 1 else f"rtol {rtol:g}"
        return ", ".join(tier(last, rtol) for last, rtol in self.tiers) + f", atol {self.atol:g}"


TIER = re.compile(r"rtol=(\S+?)(?: through step (\d+)| after)?$")


def parse_tolerance(line: str, where: str) -> Tolerance:
    """`# tolerance rtol=R1 through step S1, ..., rtol=Rn [after], atol=A: why`."""
    if not line.startswith("# tolerance ") or ":" not in line:
        raise SystemExit(f"{where}: a tolerance line reads '# tolerance rtol=R atol=A: why', "
                         f"not {line.strip()!r}")
    spec, why = line[len("# tolerance "):].split(":", 1)
    tiers, atol = [], None
    try:
        for item in re.split(r",\s*|\s+(?=atol=)", spec.strip()):
            if item.startswith("atol="):
                atol = float(item[len("atol="):])
                continue
            match = TIER.match(item)
            if not match:
                raise ValueError(item)
            tiers.append((int(match.group(2)) if match.group(2) else None, float(match.group(1))))
    except ValueError as e:
        raise SystemExit(f"{where}: cannot read {e} in the tolerance line {line.strip()!r}")
    steps = [last for last, _ in tiers if last is not None]
    if (atol is None or not atol >= 0 or not tiers or None in [last for last, _ in tiers[:-1]]
            or steps != sorted(set(steps)) or any(not rtol >= 0 for _, rtol in tiers)):
        raise SystemExit(f"{where}: the tolerance line {line.strip()!r} needs rtol tiers in "
                         "ascending steps (each but the last 'through step S') and an atol")
    return Tolerance(tiers, atol, why.strip())


def read_reference(path: str):
    """The reference's rows {(series, step): loss} and its tolerance (None without a line)."""
    with open(path) as f:
        lines = f.readlines()
    tolerance = None
    for line in lines:
        if line.startswith("# tolerance"):
            tolerance = parse_tolerance(line, path)
    rows = {(r["series"], int(r["step"])): float(r["loss"])
            for r in csv.DictReader(line for line in lines if not line.startswith("#"))}
    return rows, tolerance


def write(args) -> int:
    if args.tolerance:
        parse_tolerance(args.tolerance, "--tolerance")
    out = csv.writer(sys.stdout, lineterminator="\n")
    sys.stdout.write(f"# ddptrain reference log: inputs/{args.deck}.cfg at {args.ranks} rank(s); "
                     "written by share/dev/make_reference_logs.sh\n")
    if args.tolerance:
        sys.stdout.write(args.tolerance.rstrip("\n") + "\n")
    out.writerow(["series", "step", "loss"])
    for series, step, value in rows_of(args.run_dir):
        out.writerow([series, step, f"{value:.9g}"])
    return 0


def diff(args) -> int:
    reference, _ = read_reference(args.reference)
    rows = rows_of(args.run_dir)
    if not rows:
        print(f"FAIL: {args.run_dir} logged no rows", file=sys.stderr)
        return 1
    for series, step, value in rows:
        if (series, step) not in reference:
            print(f"FAIL: {series} step {step}: not in {args.reference}", file=sys.stderr)
            return 1
        expected = reference[(series, step)]
        relative = abs(value - expected) / abs(expected) if expected else abs(value)
        print(f"{series}\t{step}\t{value:.9g}\t{expected:.9g}\t{relative:.3g}")
    return 0


def compare(args) -> int:
    reference, tolerance = read_reference(args.reference)
    if tolerance is None and (args.rtol is None or args.atol is None):
        print(f"FAIL: {args.reference} has no '# tolerance' line (measure one with "
              "share/dev/deck_spread.sh) and --rtol/--atol do not give it")
        return 1
    if args.rtol is not None or args.atol is not None:
        tiers = [(None, args.rtol)] if args.rtol is not None else tolerance.tiers
        atol = args.atol if args.atol is not None else tolerance.atol
        tolerance = Tolerance(tiers, atol, "from the command line")
    rows = rows_of(args.run_dir)
    if not rows:
        print(f"FAIL: {args.run_dir} logged no rows")
        return 1
    bad = 0
    worst = 0.0
    for series, step, value in rows:
        if (series, step) not in reference:
            print(f"FAIL: {series} step {step}: not in {args.reference}")
            bad += 1
            continue
        expected = reference[(series, step)]
        difference = abs(value - expected)
        allowed = tolerance.atol + tolerance.rtol(step) * abs(expected)
        worst = max(worst, difference / allowed if allowed > 0 else 0.0)
        if not difference <= allowed:
            print(f"FAIL: {series} step {step}: loss {value:.9g}, reference {expected:.9g} "
                  f"(difference {difference:.3g} > {allowed:.3g})")
            bad += 1
    print(f"{len(rows)} rows against {args.reference}: {bad} outside the tolerance "
          f"({tolerance}); largest difference {worst:.3g} of the allowed")
    if bad:
        print(f"the tolerance: {tolerance.why}")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("run_dir")
    w.add_argument("deck")
    w.add_argument("ranks", type=int)
    w.add_argument("--tolerance", help="the '# tolerance' line to write (make_reference_logs.sh "
                   "keeps the one of the file it replaces)")
    c = sub.add_parser("compare")
    c.add_argument("run_dir")
    c.add_argument("reference")
    c.add_argument("--rtol", type=float, help="every row's rtol, instead of the reference's")
    c.add_argument("--atol", type=float, help="the atol, instead of the reference's")
    d = sub.add_parser("diff")
    d.add_argument("run_dir")
    d.add_argument("reference")
    args = parser.parse_args()
    return {"write": write, "compare": compare, "diff": diff}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
