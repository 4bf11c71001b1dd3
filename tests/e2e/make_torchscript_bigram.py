#!/usr/bin/python3
"""Writes a tiny TorchScript language model for token data (a bigram model: embedding of the
current token -> logits of the next) for the tests of data.type = tokens. Its forward takes
[batch, block] int64 token ids and returns [batch, block, vocab] logits.

Usage: make_torchscript_bigram.py OUT.pt [--vocab 64] [--width 32] [--seed 3]
Needs Debian's python3-torch (/usr/bin/python3)."""
import argparse

import torch


class Bigram(torch.nn.Module):
    def __init__(self, vocab: int, width: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(tokens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.jit.script(Bigram(args.vocab, args.width)).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
