#!/usr/bin/python3
"""Reference logs of the input decks: what a run of inputs/DECK.cfg should print, without timings.

  reference_log.py write RUN_DIR DECK_NAME RANKS > inputs/reference/DECK_NAME.npRANKS.csv
  reference_log.py compare RUN_DIR REFERENCE.csv [--rtol R] [--atol A]

`write` turns a run's metrics.h5 into CSV rows `series,step,value`: the training loss of every
logged step (series train) and the validation loss of every evaluation (series eval).
`compare` checks that every row of a (possibly shortened) run equals the reference's row of the
same series and step within |run - reference| <= atol + rtol x |reference|, and that the run
logged at least one row; it exits 1 with a table of the differences otherwise.

Why a tolerance and not equality: the reference is written on one machine; another CPU or
OpenBLAS build may sum in another order. The decks are deterministic for a given rank count,
so on the machine that wrote the reference the difference is zero.
Needs Debian's python3-h5py (/usr/bin/python3).
"""
import argparse
import csv
import os
import sys

import h5py


def rows_of(run_dir: str) -> list:
    with h5py.File(os.path.join(run_dir, "metrics.h5"), "r", swmr=True) as f:
        rows = [("train", int(s), float(v)) for s, v in zip(f["train/step"][:], f["train/loss"][:])]
        if "eval" in f and "step" in f["eval"]:
            rows += [("eval", int(s), float(v)) for s, v in zip(f["eval/step"][:], f["eval/loss"][:])]
    return rows


def write(args) -> int:
    out = csv.writer(sys.stdout, lineterminator="\n")
    sys.stdout.write(f"# ddptrain reference log: inputs/{args.deck}.cfg at {args.ranks} rank(s); "
                     "written by share/ddptrain/make_reference_logs.sh\n")
    out.writerow(["series", "step", "loss"])
    for series, step, value in rows_of(args.run_dir):
        out.writerow([series, step, f"{value:.9g}"])
    return 0


def compare(args) -> int:
    with open(args.reference) as f:
        reference = {(r["series"], int(r["step"])): float(r["loss"])
                     for r in csv.DictReader(line for line in f if not line.startswith("#"))}
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
        allowed = args.atol + args.rtol * abs(expected)
        worst = max(worst, difference / allowed if allowed > 0 else 0.0)
        if not difference <= allowed:
            print(f"FAIL: {series} step {step}: loss {value:.9g}, reference {expected:.9g} "
                  f"(difference {difference:.3g} > {allowed:.3g})")
            bad += 1
    print(f"{len(rows)} rows against {args.reference}: {bad} outside the tolerance "
          f"(rtol {args.rtol}, atol {args.atol}); largest difference {worst:.3g} of the allowed")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("run_dir")
    w.add_argument("deck")
    w.add_argument("ranks", type=int)
    c = sub.add_parser("compare")
    c.add_argument("run_dir")
    c.add_argument("reference")
    c.add_argument("--rtol", type=float, default=1e-3)
    c.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    return write(args) if args.command == "write" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
