#!/usr/bin/python3
"""Writes the reference for tests/unit/test_optimizer_vs_torch.cpp: torch.optim.AdamW and
torch.optim.SGD (momentum, Nesterov, weight decay) on a 2-D weight and a 1-D bias, for 5 steps
with given gradients and a learning rate that changes every step (linear warmup, then decay).
As in ddptrain (src/optim/optimizer.cpp), weight decay applies to the weight only: the bias is
in a second parameter group without it.

HDF5 layout (float32 tensors, float64 scalars):
  /initial/weight [4, 3], /initial/bias [3]      parameters before the first step
  /grads/weight [5, 4, 3], /grads/bias [5, 3]    the gradient of each step
  /lr [5]                                        the learning rate of each step
  /adamw/{beta1,beta2,eps,weight_decay} [1]      hyperparameters
  /adamw/weight [5, 4, 3], /adamw/bias [5, 3]    parameters after each step
  /sgd/{momentum,weight_decay} [1], /sgd/nesterov [1] (int64)
  /sgd/weight [5, 4, 3], /sgd/bias [5, 3]

Usage: make_optimizer_reference.py OUT.h5    (Debian's python3-torch and python3-h5py)"""
import sys

import h5py
import torch

STEPS = 5
LRS = [0.01, 0.02, 0.03, 0.025, 0.02]  # warmup to 0.03, then decay
ADAMW = {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1}
SGD = {"momentum": 0.9, "nesterov": 1, "weight_decay": 0.05}


def run(make, weight0, bias0, grads_w, grads_b):
    """Parameters after each step of the optimizer `make` builds from two parameter groups."""
    weight = weight0.clone().requires_grad_(True)
    bias = bias0.clone().requires_grad_(True)
    optimizer = make(weight, bias)
    after_w, after_b = [], []
    for step in range(STEPS):
        for group in optimizer.param_groups:
            group["lr"] = LRS[step]
        weight.grad = grads_w[step].clone()
        bias.grad = grads_b[step].clone()
        optimizer.step()
        after_w.append(weight.detach().clone())
        after_b.append(bias.detach().clone())
    return torch.stack(after_w), torch.stack(after_b)


def adamw(weight, bias):
    betas = (ADAMW["beta1"], ADAMW["beta2"])
    return torch.optim.AdamW(
        [{"params": [weight], "weight_decay": ADAMW["weight_decay"]},
         {"params": [bias], "weight_decay": 0.0}],
        lr=LRS[0], betas=betas, eps=ADAMW["eps"], foreach=False)


def sgd(weight, bias):
    return torch.optim.SGD(
        [{"params": [weight], "weight_decay": SGD["weight_decay"]},
         {"params": [bias], "weight_decay": 0.0}],
        lr=LRS[0], momentum=SGD["momentum"], nesterov=bool(SGD["nesterov"]), foreach=False)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    torch.manual_seed(7)
    # Random, never all-zero inputs of mixed sizes, so that an error in any term shows.
    weight0 = torch.randn(4, 3)
    bias0 = torch.randn(3)
    grads_w = torch.randn(STEPS, 4, 3) * 0.5
    grads_b = torch.randn(STEPS, 3) * 0.5
    with h5py.File(sys.argv[1], "w") as f:
        f["initial/weight"] = weight0.numpy()
        f["initial/bias"] = bias0.numpy()
        f["grads/weight"] = grads_w.numpy()
        f["grads/bias"] = grads_b.numpy()
        f["lr"] = torch.tensor(LRS, dtype=torch.float64).numpy()
        for name, make, hyper in (("adamw", adamw, ADAMW), ("sgd", sgd, SGD)):
            for key, value in hyper.items():
                dtype = torch.int64 if isinstance(value, int) else torch.float64
                f[f"{name}/{key}"] = torch.tensor([value], dtype=dtype).numpy()
            w, b = run(make, weight0, bias0, grads_w, grads_b)
            f[f"{name}/weight"] = w.numpy()
            f[f"{name}/bias"] = b.numpy()


if __name__ == "__main__":
    main()
