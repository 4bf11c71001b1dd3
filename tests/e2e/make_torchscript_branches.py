#!/usr/bin/python3
"""Writes a small TorchScript model (64 inputs -> 10 classes, the quick-start deck's data) whose
forward calls submodules where the ranks of one step may not all call them (ZeRO-3's units,
src/models/torchscript_units.hpp, must leave those in the root unit):
  embed, first, last, head: called once, unconditionally -> units, in that order;
  branch: called inside an `if` on the data -> stays in the root unit;
  looped: called in a loop as many times as the data says -> stays in the root unit.
Each rank has its own batch, so at 2 ranks they soon take different branches; had `branch` and
`looped` been units, the ranks would gather different units and hang or mix their values.

Usage: make_torchscript_branches.py OUT.pt [--seed 3]
Needs Debian's python3-torch (/usr/bin/python3)."""
import argparse

import torch


class Block(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.fc = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(self.fc(self.norm(x)))


class Branches(torch.nn.Module):
    def __init__(self, inputs: int, width: int, classes: int):
        super().__init__()
        self.embed = torch.nn.Linear(inputs, width)
        self.first = Block(width)
        self.branch = Block(width)
        self.looped = Block(width)
        self.last = Block(width)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.first(self.embed(x))
        if bool(x[0, 0] > 0):
            x = self.branch(x)
        for _ in range(int(x[0, 1] > 0) + 1):
            x = self.looped(x)
        return self.head(self.last(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    scripted = torch.jit.script(Branches(64, 24, 10))
    scripted.save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
