#!/usr/bin/python3
"""PyTorch DDP anchor benchmark for ddptrain.

MLP 256 -> 1024 -> 1024 -> 1024 -> 10 (ReLU), CrossEntropy, AdamW(lr=1e-3),
synthetic data, gloo backend over tcp://127.0.0.1.

Launch (Debian: torchrun is broken, use mpirun):
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np 2 --bind-to none /usr/bin/python3 \
    share/dev/bench/pytorch_ddp_mlp.py --steps 200 --warmup 20

Rank 0 prints one machine-readable line:
  RESULT impl=pytorch_ddp ranks=N threads=T batch=B steps=S samples_per_s=X step_ms=Y final_loss=Z
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from mpirun_gloo import init_gloo, rank_and_world, set_threads

IN_DIM = 256
HIDDEN = 1024
N_HIDDEN_LAYERS = 3
N_CLASSES = 10


def build_mlp():
    layers = []
    d = IN_DIM
    for _ in range(N_HIDDEN_LAYERS):
        layers += [nn.Linear(d, HIDDEN), nn.ReLU()]
        d = HIDDEN
    layers.append(nn.Linear(d, N_CLASSES))
    return nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed warmup steps")
    p.add_argument("--batch", type=int, default=64, help="per-rank batch size")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--num-batches", type=int, default=256,
                   help="pre-generated synthetic batches per rank (cycled)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--port", type=int, default=None,
                   help="rendezvous port (default: $MASTER_PORT or 29533)")
    p.add_argument("--ddp-at-1", action="store_true",
                   help="also init gloo and wrap in DDP at world size 1 "
                        "(default: plain model when world size is 1)")
    args = p.parse_args()

    rank, world = rank_and_world()
    set_threads(args.threads)
    use_dist = world > 1 or args.ddp_at_1
    if use_dist:
        init_gloo(rank, world, args.port, 29533)

    # Same initial weights on every rank (DDP also broadcasts from rank 0).
    torch.manual_seed(args.seed)
    model = build_mlp()

    # Synthetic data, generated outside the timed region. Labels come from a
    # fixed random teacher network (same teacher on all ranks), inputs are
    # per-rank random.
    torch.manual_seed(args.seed + 7)
    teacher = build_mlp()
    g = torch.Generator().manual_seed(args.seed + 1000 + rank)
    xs = torch.randn(args.num_batches, args.batch, IN_DIM, generator=g)
    with torch.no_grad():
        ys = torch.stack([teacher(xs[i]).argmax(dim=1) for i in range(args.num_batches)])
    del teacher
    batches = [(xs[i].contiguous(), ys[i].contiguous()) for i in range(args.num_batches)]

    if use_dist:
        net = nn.parallel.DistributedDataParallel(model)  # default bucket settings
        wrap = "ddp"
    else:
        net = model
        wrap = "none"

    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    step_idx = [0]

    def step():
        x, y = batches[step_idx[0] % len(batches)]
        step_idx[0] += 1
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    if rank == 0:
        nparams = sum(p.numel() for p in model.parameters())
        print("pytorch_ddp_mlp: torch %s, ranks=%d, threads=%d, batch=%d, params=%d, "
              "wrap=%s, backend=%s, warmup=%d, steps=%d"
              % (torch.__version__, world, args.threads, args.batch, nparams, wrap,
                 "gloo" if use_dist else "none", args.warmup, args.steps), flush=True)

    loss = None
    for _ in range(args.warmup):
        loss = step()

    if use_dist:
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    if use_dist:
        dist.barrier()
    elapsed = time.perf_counter() - t0

    # Global loss: mean of the last step's loss over ranks (outside timing).
    final = loss.detach().clone() if loss is not None else torch.tensor(float("nan"))
    if use_dist:
        dist.all_reduce(final)
        final /= world
        # Take the slowest rank's elapsed time.
        el = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(el, op=dist.ReduceOp.MAX)
        elapsed = float(el.item())

    if rank == 0:
        steps = max(args.steps, 1)
        samples_per_s = (args.steps * args.batch * world / elapsed) if elapsed > 0 else 0.0
        step_ms = elapsed * 1000.0 / steps
        print("RESULT impl=pytorch_ddp ranks=%d threads=%d batch=%d steps=%d "
              "samples_per_s=%.2f step_ms=%.4f final_loss=%.6f"
              % (world, args.threads, args.batch, args.steps, samples_per_s, step_ms,
                 float(final.item())), flush=True)

    if use_dist:
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
