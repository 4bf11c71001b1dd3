#!/usr/bin/python3
"""Writes a small TorchScript model (32 inputs -> 5 classes) whose forward calls submodules in
every way ZeRO-3's units (src/models/torchscript_units.hpp) must tell apart:
  embed, blocks.0, blocks.1 (a ModuleList), head: only called -> units, in that order;
  scale: its weight read directly by forward -> stays in the root unit;
  gate, gate_tied: one weight held by both (tied by assignment) -> both stay in the root unit.

Usage: make_torchscript_blocks.py OUT.pt [--seed 3]
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


class Blocks(torch.nn.Module):
    def __init__(self, inputs: int, width: int, depth: int, classes: int):
        super().__init__()
        self.scale = torch.nn.Linear(width, width, bias=False)
        self.embed = torch.nn.Linear(inputs, width)
        self.blocks = torch.nn.ModuleList([Block(width) for _ in range(depth)])
        self.gate = torch.nn.Linear(width, width)
        self.gate_tied = torch.nn.Linear(width, width, bias=False)
        self.gate_tied.weight = self.gate.weight
        self.head = torch.nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        x = torch.tanh(x @ self.scale.weight.t())
        x = x + torch.sigmoid(self.gate(x)) * self.gate_tied(x)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    scripted = torch.jit.script(Blocks(32, 24, 2, 5))
    assert scripted.gate_tied.weight is scripted.gate.weight, "the script module lost the tie"
    scripted.save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
