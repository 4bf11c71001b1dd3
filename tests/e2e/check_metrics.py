#!/usr/bin/python3
"""Checks a run's metrics.h5 with h5py (a reader ddptrain did not write) against the progress
lines the same run printed. Usage: check_metrics.py METRICS_H5 STDOUT_TXT WORLD_SIZE"""
import re
import sys

import h5py


def main() -> int:
    path, log_path, world_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    printed = []  # (step, loss) from lines like "step  40/400  epoch 0  loss 1.79240 ..."
    with open(log_path) as log:
        for line in log:
            m = re.match(r"^step\s+(\d+)/\d+\s+epoch\s+\d+\s+loss\s+([0-9.]+)", line)
            if m:
                printed.append((int(m.group(1)), float(m.group(2))))
    problems = []
    with h5py.File(path, "r") as f:
        for attr in ("ddptrain_version", "created", "world_size", "nodes", "device", "backend",
                     "config"):
            if attr not in f.attrs:
                problems.append(f"root attribute {attr} missing")
        if f.attrs.get("world_size") != world_size:
            problems.append(f"world_size {f.attrs.get('world_size')} != {world_size}")
        if "[train]" not in str(f.attrs.get("config", "")):
            problems.append("config attribute is not the resolved deck")
        columns = ["step", "epoch", "loss", "lr", "grad_norm", "samples_per_s", "step_time_s",
                   "comm_wait_s", "data_wait_s"]
        lengths = {c: len(f["train"][c]) for c in columns}
        if len(set(lengths.values())) != 1:
            problems.append(f"/train datasets differ in length: {lengths}")
        steps = list(f["train/step"][:])
        losses = list(f["train/loss"][:])
        if [s for s, _ in printed] != steps:
            problems.append(f"steps {steps} != printed {[s for s, _ in printed]}")
        for (step, shown), stored in zip(printed, losses):
            # Printed with 5 decimals; written so that a NaN stored loss is a problem too.
            if not abs(shown - stored) <= 5e-6:
                problems.append(f"step {step}: printed loss {shown}, stored {stored}")
        if not all(g > 0 for g in f["train/grad_norm"][:]):
            problems.append("grad_norm not positive")
        if "eval" not in f or "loss" not in f["eval"]:
            problems.append("/eval group missing")
    for p in problems:
        print("FAIL", p)
    if not problems:
        print(f"metrics.h5 ok: {len(printed)} rows match the printed progress")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
