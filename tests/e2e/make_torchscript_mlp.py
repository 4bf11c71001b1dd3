#!/usr/bin/python3
"""Writes a small TorchScript MLP (32 -> 64 -> 48 -> 5) for the tests: the kind of file a user
makes with torch.jit.script(model).save(path) and trains with model.type = torchscript.

Usage: make_torchscript_mlp.py OUT.pt [--inputs 32] [--hidden 64,48] [--classes 5] [--seed 3]
Needs Debian's python3-torch (/usr/bin/python3)."""
import argparse

import torch


class Mlp(torch.nn.Module):
    def __init__(self, inputs: int, hidden: list, classes: int):
        super().__init__()
        layers = []
        width = inputs
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.Tanh()]
            width = h
        layers.append(torch.nn.Linear(width, classes))
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--inputs", type=int, default=32)
    parser.add_argument("--hidden", default="64,48")
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = Mlp(args.inputs, [int(h) for h in args.hidden.split(",")], args.classes)
    torch.jit.script(model).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
