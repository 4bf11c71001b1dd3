#!/usr/bin/python3
"""PyTorch DDP anchor for gpt_ddp.sh: the GPT of share/ddptrain/models/gpt.py trained as ddptrain
trains the same TorchScript file (model.type = torchscript, data.type = tokens). With --fsdp, the
FSDP anchor of zero3_speed.sh (PyTorch 2.x: Debian 13's).

Same as ddptrain, step for step:
  - initial weights: the state dict of the exported TorchScript file (--model), loaded into the
    eager Python GPT (or, with --scripted, the TorchScript module itself is trained);
  - data: windows of --block + 1 tokens at stride --block from the HDF5 token file, read with h5py
    inside the step loop; the first floor(windows x (1 - --val-fraction)) windows train; one
    global permutation per epoch from (seed, epoch) drawn as ddptrain's DistributedSampler draws
    it; step s of an epoch takes rows [s G, (s + 1) G), G = batch x ranks, rank r the B rows at
    offset r B;
  - loss: next-token cross-entropy, mean over the rank's batch, gradients averaged over ranks
    (DistributedDataParallel, gloo, default buckets);
  - AdamW with weight decay on >= 2-D parameters only, linear warmup then cosine to --min-lr at
    --decay-steps (ddptrain's optim.* meaning), the learning rate set before each step;
  - logged loss: mean over the log interval's steps and over ranks, at every --log-every steps;
  - throughput: global samples/s from the end of the first min(5, steps / 5) steps (ddptrain's
    warm-up rule) to the last step, the slowest rank's time.

Launch (Debian: torchrun is broken, use mpirun; OMPI_COMM_WORLD_RANK/SIZE give the rank):
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \\
    mpirun -np 2 --oversubscribe --bind-to none /usr/bin/python3 \\
    share/dev/bench/pytorch_ddp_gpt.py --model gpt.pt --n-head 4 --data tokens.h5

Rank 0 prints one line per log interval and one result line:
  LOG step=S loss=L lr=R samples_per_s=X
  RESULT impl=pytorch_ddp ranks=N threads=T batch=B steps=S samples_per_s=X step_ms=Y final_loss=Z
"""
import argparse
import math
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ddptrain",
                                "models"))
import gpt  # noqa: E402  (share/ddptrain/models/gpt.py)
from mpirun_gloo import init_gloo, rank_and_world, set_threads  # noqa: E402

# ddptrain's DistributedSampler: epoch e's permutation is drawn from seed + kEpochSeedStride (e+1).
EPOCH_SEED_STRIDE = 0x9E3779B97F4A7C15
# ddptrain's Trainer: at most this many first steps are left out of the throughput.
MAX_WARMUP_STEPS = 5


def lr_at(step, a):
    """ddptrain's LrSchedule (warmup, then cosine to min_lr at decay_steps, or constant)."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if a.schedule == "cosine":
        end = a.decay_steps if a.decay_steps > 0 else a.steps
        if step >= end:
            return a.min_lr
        progress = (step - a.warmup) / max(end - a.warmup, 1)
        return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (a.lr - a.min_lr)
    return a.lr


def build_model(a):
    scripted = torch.jit.load(a.model)
    if a.scripted:
        return scripted
    sd = scripted.state_dict()
    vocab, n_embd = sd["wte.weight"].shape
    block = sd["wpe.weight"].shape[0]
    n_layer = len({k.split(".")[1] for k in sd if k.startswith("h.")})
    model = gpt.GPT(vocab, block, n_layer, a.n_head, n_embd, dropout=a.dropout,
                    tied="lm_head.weight" not in sd)
    model.load_state_dict(sd)  # strict: the names must match
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="TorchScript file written by gpt.py")
    p.add_argument("--n-head", type=int, default=4, help="heads (not visible in the weights)")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--scripted", action="store_true",
                   help="train the TorchScript module itself instead of the eager Python GPT")
    p.add_argument("--fsdp", action="store_true",
                   help="FullyShardedDataParallel (ZeRO-3) with each Block a unit, instead of DDP "
                        "(PyTorch 2.x on the CPU: Debian 13's)")
    p.add_argument("--data", required=True, help="HDF5 token file (ddptrain make-data tokens)")
    p.add_argument("--dataset", default="tokens")
    p.add_argument("--block", type=int, default=64, help="window length (data.block)")
    p.add_argument("--val-fraction", type=float, default=0.0, help="data.val_fraction")
    p.add_argument("--batch", type=int, default=16, help="per-rank batch (train.batch_size)")
    p.add_argument("--steps", type=int, default=150, help="optimizer steps (train.steps)")
    p.add_argument("--seed", type=int, default=1, help="run.seed (data order)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--warmup", type=int, default=0, help="optim.warmup steps")
    p.add_argument("--schedule", default="cosine", choices=["cosine", "constant"])
    p.add_argument("--decay-steps", type=int, default=0, help="optim.decay_steps (0 = --steps)")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--impl", default=None, help="name on the RESULT line (default: pytorch_ddp, "
                   "or pytorch_fsdp with --fsdp)")
    p.add_argument("--port", type=int, default=None,
                   help="rendezvous port (default: $MASTER_PORT or 29534)")
    a = p.parse_args()

    rank, world = rank_and_world()
    set_threads(a.threads)
    use_dist = world > 1
    if use_dist:
        init_gloo(rank, world, a.port, 29534)

    torch.manual_seed(a.seed)
    model = build_model(a)
    model.train()
    # Weight decay on >= 2-D parameters, decided by name before FSDP flattens them.
    decayed = {n for n, q in model.named_parameters() if q.dim() >= 2}
    if use_dist and a.fsdp:
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        net = FullyShardedDataParallel(model, auto_wrap_policy=ModuleWrapPolicy({gpt.Block}),
                                       device_id=torch.device("cpu"), use_orig_params=True)
    else:
        net = nn.parallel.DistributedDataParallel(model) if use_dist else model

    tokens = h5py.File(a.data, "r")[a.dataset]
    vocab = int(tokens.attrs["vocab"])
    windows = (tokens.shape[0] - a.block - 1) // a.block + 1
    rows = windows - int(math.floor(windows * a.val_fraction))
    global_batch = a.batch * world
    steps_per_epoch = rows // global_batch
    perm_cache = {}

    def batch_rows(step):
        epoch = step // steps_per_epoch
        if epoch not in perm_cache:
            perm_cache.clear()
            g = torch.Generator().manual_seed((a.seed + EPOCH_SEED_STRIDE * (epoch + 1)) % 2**64)
            perm_cache[epoch] = torch.randperm(rows, generator=g)
        offset = (step % steps_per_epoch) * global_batch + rank * a.batch
        return perm_cache[epoch][offset:offset + a.batch].tolist()

    def read_batch(step):
        w = torch.from_numpy(np.stack([tokens[i * a.block:i * a.block + a.block + 1]
                                       for i in batch_rows(step)]).astype(np.int64))
        return w[:, :-1].contiguous(), w[:, 1:].contiguous()

    named = [(n.replace("_fsdp_wrapped_module.", ""), q) for n, q in net.named_parameters()]
    params = [q for _, q in named]
    opt = torch.optim.AdamW(
        [{"params": [q for n, q in named if n in decayed], "weight_decay": a.weight_decay},
         {"params": [q for n, q in named if n not in decayed], "weight_decay": 0.0}],
        lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)

    if rank == 0:
        print("pytorch_ddp_gpt: torch %s, ranks=%d, threads=%d, batch=%d, params=%d, %s, "
              "backend=%s, steps=%d, %d training windows of %d, vocab %d"
              % (torch.__version__, world, a.threads, a.batch,
                 sum(q.numel() for q in model.parameters()),
                 "TorchScript module" if a.scripted else "eager gpt.GPT",
                 "gloo" if use_dist else "none", a.steps, rows, a.block, vocab), flush=True)

    warmup_steps = min(MAX_WARMUP_STEPS, a.steps // 5)
    interval_loss, interval_steps = 0.0, 0
    t_interval = time.perf_counter()
    t_steady = t_interval
    last_logged = float("nan")
    for step in range(a.steps):
        if step == warmup_steps:
            t_steady = time.perf_counter()
        x, y = read_batch(step)
        opt.zero_grad(set_to_none=True)
        logits = net(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        lr = lr_at(step, a)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        interval_loss += loss.item()
        interval_steps += 1
        done = step + 1
        if done % a.log_every == 0 or done == a.steps:
            mean = torch.tensor([interval_loss / interval_steps], dtype=torch.float64)
            if use_dist:
                dist.all_reduce(mean)
                mean /= world
            now = time.perf_counter()
            last_logged = mean.item()
            if rank == 0:
                print("LOG step=%d loss=%.6f lr=%.6g samples_per_s=%.2f"
                      % (done, mean.item(), lr,
                         global_batch * interval_steps / (now - t_interval)), flush=True)
            interval_loss, interval_steps, t_interval = 0.0, 0, time.perf_counter()
    elapsed = time.perf_counter() - t_steady
    if use_dist:
        el = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(el, op=dist.ReduceOp.MAX)  # the slowest rank's time
        elapsed = float(el.item())
    if rank == 0:
        timed = a.steps - warmup_steps
        impl = a.impl or ("pytorch_fsdp" if a.fsdp else "pytorch_ddp")
        print("RESULT impl=%s ranks=%d threads=%d batch=%d steps=%d samples_per_s=%.2f "
              "step_ms=%.4f final_loss=%.6f"
              % (impl, world, a.threads, a.batch, a.steps, global_batch * timed / elapsed,
                 elapsed * 1e3 / max(timed, 1), last_logged), flush=True)
    if use_dist:
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
