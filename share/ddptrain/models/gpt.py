#!/usr/bin/python3
"""GPT-style decoder in PyTorch, exported as TorchScript for `ddptrain train`.

The same architecture as ddptrain's built-in GPT, with the same parameter names, so a state dict
moves between the two:

  wte, wpe                   token and position embeddings (summed, then dropout)
  h.{i}.ln_1                 LayerNorm before attention (pre-norm)
  h.{i}.attn.c_attn          Linear(n_embd, 3 n_embd): q, k, v in that order
  h.{i}.attn.c_proj          Linear(n_embd, n_embd), then residual dropout
  h.{i}.ln_2                 LayerNorm before the MLP
  h.{i}.mlp.c_fc             Linear(n_embd, 4 n_embd), exact GELU
  h.{i}.mlp.c_proj           Linear(4 n_embd, n_embd), then dropout
  ln_f                       final LayerNorm
  lm_head                    only when untied (Linear(n_embd, vocab), no bias); tied by default:
                             logits = x @ wte.weight^T

forward(tokens: int64 [N, T]) -> logits [N, T, vocab], T <= block. For `ddptrain generate` the
module also exports a cached step (design.md, "A TorchScript model's cached step"):
make_cache(rows, capacity) -> a tensor [2 n_layer, rows, n_head, capacity, head_dim] (dimension 1
is the row), and decode(tokens [N, T], cache, start) -> logits of each row's last token [N,
vocab], the tokens at positions start.. with every layer's keys and values written into the cache
and attended to with those before. Causal self-attention is
written out (torch 1.13 has no scaled_dot_product_attention). Initialisation as nanoGPT: Linear
and Embedding weights N(0, 0.02), biases 0, each block's two c_proj weights
N(0, 0.02 / sqrt(2 n_layer)), LayerNorm weight 1 and bias 0.

Export, then train it with ddptrain (no Python needed where it trains):

  /usr/bin/python3 share/ddptrain/models/gpt.py --output runs/torchscript/gpt.pt \\
      --vocab 256 --block 64 --n-layer 4 --n-head 4 --n-embd 128 [--dropout 0.1] [--untied]
  mpirun -np 2 ddptrain train inputs/torchscript.cfg

where the deck has `[model] type = torchscript`, `path = runs/torchscript/gpt.pt` and
`[data] type = tokens` with `block` equal to --block (or smaller) and a vocabulary equal to
--vocab (the token file's `vocab` attribute, see `ddptrain make-data tokens`). ddptrain adds the
next-token cross-entropy loss, trains every parameter of the file and starts from the weights
in it (rank 0's, broadcast), so --seed fixes the initial model.
"""
import argparse
import math
import sys
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

# nanoGPT's initialisation: N(0, 0.02) for weights, residual projections scaled by 1/sqrt(2 L).
INIT_STD = 0.02


def dropout_layer(p: float) -> nn.Module:
    """nn.Dropout(p), or nn.Identity() when p = 0. Eager dropout returns its input at p = 0, but
    TorchScript's autodiff rewrites dropout as bernoulli_ and a multiply, which it then runs even at
    p = 0 (13 extra masks per step for 4 layers): the scripted model would pay for nothing."""
    return nn.Dropout(p) if p > 0 else nn.Identity()


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError("n_embd = %d is not a multiple of n_head = %d" % (n_embd, n_head))
        self.n_embd = n_embd
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = dropout_layer(dropout)
        self.resid_dropout = dropout_layer(dropout)

    @torch.jit.export
    def decode(self, x: torch.Tensor, cache: torch.Tensor, layer: int, start: int) -> torch.Tensor:
        """forward for positions start.. of x's rows, with layer `layer`'s keys and values cached."""
        n, t, c = x.size(0), x.size(1), x.size(2)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
        end = start + t
        cache[2 * layer, :n, :, start:end] = k.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
        cache[2 * layer + 1, :n, :, start:end] = v.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
        keys, values = cache[2 * layer, :n, :, :end], cache[2 * layer + 1, :n, :, :end]
        att = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if t > 1:  # the prompt: causal among its positions (a new token sees all cached ones)
            future = torch.ones(t, end, dtype=torch.bool, device=x.device).triu(start + 1)
            att = att.masked_fill(future, float("-inf"))
        y = (F.softmax(att, dim=-1) @ values).transpose(1, 2).contiguous().view(n, t, c)
        return self.c_proj(y)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, c = x.size(0), x.size(1), x.size(2)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(n, t, self.n_head, self.head_dim).transpose(1, 2)  # [N, H, T, D]
        k = k.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(n, t, self.n_head, self.head_dim).transpose(1, 2)
        # Scaled by 1/sqrt(head_dim) as a product, as the native C++ GPT does.
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(n, t, c)
        return self.resid_dropout(self.c_proj(y))


class Mlp(nn.Module):
    def __init__(self, n_embd: int, dropout: float):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()  # exact (erf) GELU
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = dropout_layer(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = Mlp(n_embd, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

    @torch.jit.export
    def decode(self, x: torch.Tensor, cache: torch.Tensor, layer: int, start: int) -> torch.Tensor:
        x = x + self.attn.decode(self.ln_1(x), cache, layer, start)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, block: int, n_layer: int, n_head: int, n_embd: int,
                 dropout: float = 0.0, tied: bool = True):
        super().__init__()
        self.block = block
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.drop = dropout_layer(dropout)
        self.h = nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        # None when tied: TorchScript then compiles the tied branch only.
        self.lm_head: Optional[nn.Linear] = None if tied else nn.Linear(n_embd, vocab, bias=False)
        self.apply(self._init_module)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=INIT_STD / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_module(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    @torch.jit.export
    def make_cache(self, rows: int, capacity: int) -> torch.Tensor:
        """Every layer's keys and values for `rows` rows of `capacity` positions (dimension 1: the
        row), allocated once for a batch by `ddptrain generate`."""
        weight = self.wte.weight
        n_head = self.h[0].attn.n_head if len(self.h) > 0 else 1
        head_dim = weight.size(1) // n_head
        return torch.empty([2 * len(self.h), rows, n_head, capacity, head_dim], dtype=weight.dtype,
                           device=weight.device)

    @torch.jit.export
    def decode(self, tokens: torch.Tensor, cache: torch.Tensor, start: int) -> torch.Tensor:
        """The logits of each row's last token [N, vocab] after `tokens` [N, T] at positions
        start..start + T, every layer's keys and values written into `cache` and attended to with
        the `start` positions cached before."""
        t = tokens.size(1)
        if start + t > self.block:
            raise ValueError("positions beyond the model's block (position table)")
        pos = torch.arange(start, start + t, dtype=torch.long, device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        layer = 0
        for block in self.h:
            x = block.decode(x, cache, layer, start)
            layer += 1
        x = self.ln_f(x[:, -1])
        lm_head = self.lm_head
        if lm_head is not None:
            return lm_head(x)
        return F.linear(x, self.wte.weight)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.size(1)
        if t > self.block:
            raise ValueError("sequence longer than the model's block (position table)")
        pos = torch.arange(0, t, dtype=torch.long, device=tokens.device)
        x = self.drop(self.wte(tokens) + self.wpe(pos))
        for layer in self.h:
            x = layer(x)
        x = self.ln_f(x)
        lm_head = self.lm_head
        if lm_head is not None:
            return lm_head(x)
        return F.linear(x, self.wte.weight)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="Export a GPT-style decoder as TorchScript for ddptrain (model.type = "
                    "torchscript).")
    p.add_argument("--output", required=True, help="TorchScript file to write (e.g. gpt.pt)")
    p.add_argument("--vocab", type=int, default=256, help="vocabulary size")
    p.add_argument("--block", type=int, default=64, help="context length (position table)")
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0, help="embedding, attention, residual")
    p.add_argument("--untied", action="store_true", help="separate lm_head instead of wte^T")
    p.add_argument("--seed", type=int, default=1234, help="seed of the initial weights")
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.block, args.n_layer, args.n_head, args.n_embd,
                dropout=args.dropout, tied=not args.untied)
    scripted = torch.jit.script(model)
    scripted.save(args.output)
    params = sum(t.numel() for t in model.parameters())
    print("%s: GPT vocab %d, block %d, %d layers, %d heads, n_embd %d, dropout %g, %s head, "
          "%d parameters" % (args.output, args.vocab, args.block, args.n_layer, args.n_head,
                             args.n_embd, args.dropout, "untied" if args.untied else "tied",
                             params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
