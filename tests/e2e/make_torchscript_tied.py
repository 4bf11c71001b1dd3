#!/usr/bin/python3
"""Writes a small TorchScript language model whose output layer's weight IS the embedding's
(tied by assignment, `head.weight = emb.weight`, as nanoGPT and many Hugging Face models tie
them): one parameter held by two attributes. Its forward takes token ids [B, T] and returns
logits [B, T, vocab], as model.type = torchscript with data.type = tokens expects.

Usage: make_torchscript_tied.py OUT.pt [--vocab 256] [--width 32] [--seed 1]
Needs Debian's python3-torch (/usr/bin/python3)."""
import argparse

import torch


class TiedLm(torch.nn.Module):
    def __init__(self, vocab: int, width: int):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, width)
        self.mid = torch.nn.Linear(width, width)
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.mid(self.emb(tokens))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = TiedLm(args.vocab, args.width)
    scripted = torch.jit.script(model)
    assert scripted.head.weight is scripted.emb.weight, "the script module lost the tie"
    scripted.save(args.out)
    count = sum(p.numel() for p in model.parameters())  # each tensor once
    print(f"wrote {args.out}: {count} parameters")


if __name__ == "__main__":
    main()
