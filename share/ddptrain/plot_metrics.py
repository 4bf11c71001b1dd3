#!/usr/bin/python3
"""Plots the training curves of one or several ddptrain runs and prints a summary table.

Usage: plot_metrics.py RUN [RUN ...] [-o curves.png]
RUN is a run directory (run.dir) or its metrics.h5. Needs Debian's python3-h5py and
python3-matplotlib (/usr/bin/python3).

metrics.h5 layout: root attributes ddptrain_version, created, world_size, nodes,
device, backend, config (the resolved deck); /train holds equal-length 1-D datasets step, epoch,
loss, lr, grad_norm, samples_per_s, step_time_s, comm_wait_s, data_wait_s, skipped_steps (one row
per log interval);
/eval holds step, loss and the task's metrics (accuracy; perplexity for token data), one row per
evaluation. The writer keeps the file in SWMR mode, so open it with
h5py.File(path, "r", swmr=True): that works while the job runs, after it ends, and after it was
killed (a plain open works only after a clean end).
"""
import argparse
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")  # files only; no display on cluster nodes
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [("loss", "loss"), ("lr", "learning rate"), ("samples_per_s", "samples/s (global)"),
          ("grad_norm", "gradient norm")]


def metrics_path(run: str) -> str:
    return os.path.join(run, "metrics.h5") if os.path.isdir(run) else run


def load(run: str) -> dict:
    with h5py.File(metrics_path(run), "r", swmr=True) as f:
        data = {name: f["train"][name][:] for name in f["train"]}
        data["eval"] = {name: f["eval"][name][:] for name in f["eval"]} if "eval" in f else {}
        data["attrs"] = {k: f.attrs[k] for k in f.attrs}
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("-o", "--output", default="curves.png")
    args = parser.parse_args()
    runs = []
    for run in args.runs:
        try:
            runs.append((run, load(run)))
        except (OSError, KeyError) as e:
            print(f"plot_metrics: cannot read {metrics_path(run)}: {e}", file=sys.stderr)
            return 3
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, (key, label) in zip(axes.flat, PANELS):
        for name, data in runs:
            if len(data["step"]):
                ax.plot(data["step"], data[key], label=name)
            evals = data["eval"]
            if key == "loss" and len(evals.get("step", [])):
                ax.plot(evals["step"], evals["loss"], "o--", label=f"{name} (eval)")
        ax.set_xlabel("step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes.flat[0].set_yscale("log")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)

    print(f"{'run':<32} {'ranks':>5} {'steps':>7} {'final loss':>11} {'best eval':>10} "
          f"{'samples/s':>10}")
    for name, data in runs:
        steps = int(data["step"][-1]) if len(data["step"]) else 0
        loss = float(data["loss"][-1]) if len(data["loss"]) else float("nan")
        rate = float(data["samples_per_s"][-1]) if len(data["samples_per_s"]) else float("nan")
        eval_loss = data["eval"].get("loss", [])
        best = float(min(eval_loss)) if len(eval_loss) else float("nan")
        print(f"{name:<32} {int(data['attrs']['world_size']):>5} {steps:>7} {loss:>11.5f} "
              f"{best:>10.5f} {rate:>10.0f}")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
