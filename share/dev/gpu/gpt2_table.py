#!/usr/bin/env python3
"""The GPT-2 124M benchmark table of share/dev/gpu/build_and_test.sh, from the logs it wrote.

Usage: gpt2_table.py OUT_DIR
Reads pytorch_eager.log and pytorch_compiled.log (gpt2_pytorch.py's RESULT, MATMUL and CHECKPOINT
lines), ddptrain_gpt2_1.log and ddptrain_gpt2_2.log (ddptrain's progress rows of steps 11..50:
median and spread of their samples/s; and the checkpoint line) and
the PEAK_GPU_MIB line each got. MFU = tokens/s x FLOPs per token / the bf16 matrix rate measured in
the same call, with FLOPs per token = 6 N + 12 L d T (N: parameters without the position table;
the attention term counts the full T x T products, as PaLM's appendix and nanoGPT do).
"""
import os
import re
import statistics
import sys

N_LAYER, N_EMBD, BLOCK, VOCAB = 12, 768, 1024, 50304


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def field(text, pattern, cast=float):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else None


def main():
    out = sys.argv[1]
    eager, compiled = read(os.path.join(out, "pytorch_eager.log")), read(
        os.path.join(out, "pytorch_compiled.log"))
    tflops = field(eager, r"MATMUL tflops=([\d.]+)") or field(compiled, r"MATMUL tflops=([\d.]+)")
    params = field(eager, r"params=(\d+)", int) or field(compiled, r"params=(\d+)", int)
    if params is None:  # the same architecture: embeddings, 12 blocks, final norm, tied head
        d = N_EMBD
        params = VOCAB * d + BLOCK * d + N_LAYER * (12 * d * d + 13 * d) + 2 * d
    flops_per_token = 6 * (params - BLOCK * N_EMBD) + 12 * N_LAYER * N_EMBD * BLOCK
    rows = []
    for text, impl in ((eager, "eager_foreach"), (eager, "eager_fused"),
                       (compiled, "compiled_fused")):
        line = next((l for l in text.splitlines() if l.startswith("RESULT impl=%s " % impl)), None)
        if line is None:
            rows.append(("PyTorch " + impl, None, "", None, None, None))
            continue
        rows.append(("PyTorch " + impl, field(line, r"tokens_per_s=([\d.]+)"),
                     field(line, r"spread=(\S+)", str), field(line, r"peak_alloc_gib=([\d.]+)"),
                     field(text, r"PEAK_GPU_MIB=(\d+)"),
                     field(text, r"CHECKPOINT impl=%s seconds=([\d.]+)" % impl)))
    for run in (1, 2):
        text = read(os.path.join(out, "ddptrain_gpt2_%d.log" % run))
        # Rows "step N/60 ... samples/s X": the first holds the warm-up, the last the checkpoint.
        steady = [float(m.group(2)) * BLOCK for m in
                  re.finditer(r"^step +(\d+)/(?:\d+) .*?samples/s ([\d.]+)", text, re.M)
                  if 10 < int(m.group(1)) <= 50]
        rate = statistics.median(steady) if steady else None
        switches = field(text, r"(?m)^SWITCHES=(.*)$", str)
        rows.append(("ddptrain run %d%s" % (run, " (%s)" % switches if switches else ""), rate,
                     "%.0f..%.0f" % (min(steady), max(steady)) if steady else "", None,
                     field(text, r"PEAK_GPU_MIB=(\d+)"),
                     field(text, r"checkpoint: .* write ([\d.]+) s\)")))
    print("GPT-2 124M (%d parameters), bf16, one GPU, batch 16 x 1024 tokens; bf16 matmul "
          "measured %s TFLOP/s; %.3g FLOP per token" % (params, tflops, flops_per_token))
    print("| run | tokens/s | spread (PyTorch: 3 chunks of 10 steps; ddptrain: 4 rows of 10) | MFU | peak GPU memory (nvidia-smi) | "
          "peak allocated | checkpoint write s |")
    print("|---|---|---|---|---|---|---|")
    for name, rate, spread, alloc, smi, ckpt in rows:
        mfu = "%.1f%%" % (100 * rate * flops_per_token / (tflops * 1e12)) if rate and tflops else "-"
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, "%.0f" % rate if rate else "FAILED", spread or "-", mfu,
            "%d MiB" % smi if smi else "-", "%.2f GiB" % alloc if alloc else "-",
            "%.3f" % ckpt if ckpt else "-"))
    print_phases(out, eager, compiled)
    return 0


def print_phases(out, eager, compiled):
    """Where a step's time goes on the GPU, from CUDA events at each phase's end: PyTorch's PHASES
    lines, and ddptrain's summary line "step time (GPU)" (its steady steps; "other" is data,
    zero+sync and between steps, whose between steps include the metrics rows)."""
    print()
    print("| run (ms per step, GPU) | forward | backward | optimizer | other | total |")
    print("|---|---|---|---|---|---|")
    for text, impl in ((eager, "eager_foreach"), (eager, "eager_fused"),
                       (compiled, "compiled_fused")):
        line = next((l for l in text.splitlines() if l.startswith("PHASES impl=%s " % impl)), "")
        ms = {k: field(line, r"%s_ms=([\d.]+)" % k) for k in
              ("forward", "backward", "optimizer", "between")}
        if None in ms.values():
            print("| PyTorch %s | - | - | - | - | - |" % impl)
            continue
        print("| PyTorch %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            impl, ms["forward"], ms["backward"], ms["optimizer"], ms["between"],
            sum(ms.values())))
    for run in (1, 2):
        text = read(os.path.join(out, "ddptrain_gpt2_%d.log" % run))
        line = next((l for l in text.splitlines() if "step time (GPU)" in l), "")
        total = field(line, r"([\d.]+) ms per step")
        parts = dict((name, float(value)) for name, value in
                     re.findall(r"(forward|backward|optimizer|data|zero\+sync|between steps) "
                                r"(-?[\d.]+) \(", line))
        if total is None or len(parts) != 6:
            print("| ddptrain run %d | - | - | - | - | - |" % run)
            continue
        other = parts["data"] + parts["zero+sync"] + parts["between steps"]
        print("| ddptrain run %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            run, parts["forward"], parts["backward"], parts["optimizer"], other, total))


if __name__ == "__main__":
    sys.exit(main())
