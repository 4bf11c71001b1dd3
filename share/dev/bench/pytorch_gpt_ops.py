#!/usr/bin/python3
"""PyTorch's side of gpt_op_profile.sh: the GPT of share/ddptrain/models/gpt.py (eager, exact
GELU), at the shapes of ddptrain-bench gpt-ops (vocab 256, block 64, 4 layers, 4 heads, 128 wide,
batch 16), trained on random tokens with AdamW as pytorch_ddp_gpt.py makes it (weight decay on
>= 2-D parameters), one process, --threads intra-op threads. After a warm-up, --steps steps are
timed, then --steps more run under torch.profiler, whose trace goes to --trace (Chrome's format).
Debian's /usr/bin/python3 has torch 1.13.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ddptrain",
                                "models"))
import gpt  # noqa: E402  (share/ddptrain/models/gpt.py)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--trace", default="/tmp/pytorch_gpt_ops.json")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    vocab, block, batch = 256, 64, 16
    model = gpt.GPT(vocab, block, n_layer=4, n_head=4, n_embd=128)
    model.train()
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        [{"params": [q for q in params if q.dim() >= 2], "weight_decay": 0.1},
         {"params": [q for q in params if q.dim() < 2], "weight_decay": 0.0}],
        lr=2e-3, betas=(0.9, 0.99), eps=1e-8)
    tokens = torch.randint(0, vocab, (batch, block + 1))
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(inputs)
        F.cross_entropy(logits.view(-1, vocab), targets.view(-1)).backward()
        opt.step()

    for _ in range(10):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    print("PyTorch eager GPT: %.2f ms per step without the profiler (%d steps)"
          % ((time.perf_counter() - start) * 1e3 / a.steps, a.steps))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(a.steps):
            step()
    prof.export_chrome_trace(a.trace)
    print("trace of %d steps: %s" % (a.steps, a.trace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
