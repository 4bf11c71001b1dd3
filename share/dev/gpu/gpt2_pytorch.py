#!/usr/bin/env python3
"""The PyTorch side of the GPU benchmark (share/dev/gpu/build_and_test.sh runs it on the lent GPU):
GPT-2 124M (the architecture of share/ddptrain/models/gpt.py, which is ddptrain's built-in GPT,
with attention through scaled_dot_product_attention), bf16 autocast, AdamW, random tokens,
one GPU, the batch ddptrain runs. Variants: eager with torch.optim.AdamW's default (foreach)
kernels, eager with fused=True, and torch.compile(model) with fused=True.

Also measures the GPU's bf16 matrix rate (8192^3, random data, CUDA events, median of 10 after
3 warm-ups): the denominator of MFU here and in the ddptrain row.

Prints one line per measurement:
  MATMUL tflops=X
  RESULT impl=NAME tokens_per_s=X spread=LO..HI step_ms=Y peak_alloc_gib=Z final_loss=L
  PHASES impl=NAME between_ms=A forward_ms=B backward_ms=C optimizer_ms=D   (medians, CUDA events)
  CHECKPOINT impl=NAME seconds=S bytes=B   (torch.save of model + optimizer state, fsync'd)
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ddptrain",
                                "models"))
import gpt  # noqa: E402  (share/ddptrain/models/gpt.py)


def sdpa_forward(self, x):
    """gpt.CausalSelfAttention.forward through SDPA (flash attention in bf16), as a PyTorch 2.x
    user writes it; the weights and the function are the same."""
    n, t, c = x.size()
    q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
    q = q.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
    k = k.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
    v = v.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(n, t, c)))


def matmul_tflops():
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * n**3 / statistics.median(times) / 1e12


def run(a, impl):
    torch.manual_seed(a.seed)
    gpt.CausalSelfAttention.forward = sdpa_forward
    model = gpt.GPT(a.vocab, a.block, a.n_layer, a.n_head, a.n_embd).cuda()
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    fused = impl != "eager_foreach"
    opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=fused)
    net = torch.compile(model) if impl == "compiled_fused" else model
    tokens = torch.randint(0, a.data_vocab, (a.batch, a.block + 1), device="cuda")
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step(marks=None):
        """One step; with `marks` (a list), appends a recorded CUDA event where each phase ends,
        as ddptrain's summary splits its step (its "step time (GPU)" line)."""
        def mark():
            if marks is not None:
                marks.append(torch.cuda.Event(enable_timing=True))
                marks[-1].record()
        mark()  # the time from the last step's end: between steps
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = net(x)
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
        mark()  # forward
        loss.backward()
        mark()  # backward
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        mark()  # optimizer
        return loss

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        loss = step()
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - t0
    torch.cuda.reset_peak_memory_stats()
    rates = []
    for _ in range(a.chunks):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.steps):
            loss = step()
        end.record()
        end.synchronize()
        rates.append(a.batch * a.block * a.steps / (start.elapsed_time(end) / 1e3))
    median = statistics.median(rates)
    # Where the step's time goes, on the GPU, in steps of their own (events recorded at each
    # phase's end; read after the last one): the phases ddptrain's summary reports.
    marks = []
    for _ in range(a.steps):
        step(marks)
    marks[-1].synchronize()
    phases = {"between": [], "forward": [], "backward": [], "optimizer": []}
    names = ["between", "forward", "backward", "optimizer"]
    for i in range(1, len(marks)):
        phases[names[i % 4]].append(marks[i - 1].elapsed_time(marks[i]))
    print("PHASES impl=%s %s" % (impl, " ".join(
        "%s_ms=%.2f" % (name, statistics.median(times)) for name, times in phases.items())),
        flush=True)
    print("RESULT impl=%s tokens_per_s=%.0f spread=%.0f..%.0f step_ms=%.2f peak_alloc_gib=%.2f "
          "final_loss=%.4f warmup_s=%.1f params=%d"
          % (impl, median, min(rates), max(rates), a.batch * a.block / median * 1e3,
             torch.cuda.max_memory_allocated() / 2**30, loss.item(), warmup_s,
             sum(p.numel() for p in params)), flush=True)
    if impl == "eager_fused":
        path = os.path.join(a.scratch, "pytorch_checkpoint.pt")
        t0 = time.perf_counter()
        with open(path, "wb") as f:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, f)
            f.flush()
            os.fsync(f.fileno())
        print("CHECKPOINT impl=%s seconds=%.3f bytes=%d"
              % (impl, time.perf_counter() - t0, os.path.getsize(path)), flush=True)
        os.remove(path)
    del net, model, opt
    torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", action="append",
                   choices=["eager_foreach", "eager_fused", "compiled_fused"])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--n-layer", type=int, default=12)
    p.add_argument("--n-head", type=int, default=12)
    p.add_argument("--n-embd", type=int, default=768)
    p.add_argument("--vocab", type=int, default=50304, help="model vocabulary (padded)")
    p.add_argument("--data-vocab", type=int, default=50257, help="token ids drawn below this")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=10, help="steps per timed chunk")
    p.add_argument("--chunks", type=int, default=3)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--scratch", default="/tmp")
    a = p.parse_args()
    print("gpt2_pytorch: torch %s, %s, batch %d x %d tokens"
          % (torch.__version__, torch.cuda.get_device_name(), a.batch, a.block), flush=True)
    print("MATMUL tflops=%.1f" % matmul_tflops(), flush=True)
    for impl in a.impl or ["eager_foreach", "eager_fused", "compiled_fused"]:
        run(a, impl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
