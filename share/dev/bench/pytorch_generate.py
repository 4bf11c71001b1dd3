#!/usr/bin/python3
"""PyTorch eager generation with a KV cache: the anchor of share/dev/bench/generate_speed.sh.

The GPT of share/ddptrain/models/gpt.py gets a ddptrain checkpoint's /model tensors and continues
the prompts of a prompts file (/tokens, /offsets; every row of one length) greedily, BATCH rows at
a time, the way Hugging Face's `generate` does with `use_cache=True`: the prompts in one forward,
then one position per new token against each layer's cached keys and values. The cache is
allocated once per batch (Hugging Face grows it by concatenation, which is slower): the anchor is
PyTorch at its best in eager mode, not a straw man. No stop tokens, so every row makes MAX_NEW.

Prints one line `pytorch: ROWS rows, TOKENS new tokens in S s (R tokens/s)`, timing the batches
only (not the loading; on a GPU with CUDA events), and with --output writes the new tokens (int64, row after row) to an .npy
file so the benchmark can check both sides made the same tokens.

Usage: pytorch_generate.py CHECKPOINT PROMPTS.h5 VOCAB CONTEXT N_LAYER N_HEAD N_EMBD MAX_NEW BATCH
       [--rows FIRST:END] [--threads N] [--device cpu|cuda] [--output TOKENS.npy]
"""
import argparse
import math
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../ddptrain/models"))
from gpt import GPT  # noqa: E402


class Cache:
    """Each layer's keys and values for a batch, [N, H, T, D], filled up to `length`."""

    def __init__(self, n_layer, rows, n_head, positions, head_dim, device):
        shape = (n_layer, 2, rows, n_head, positions, head_dim)
        self.kv = torch.empty(shape, device=device)
        self.length = 0


def attend(attn, x, layer, cache):
    n, t, c = x.shape
    h, d = attn.n_head, attn.head_dim
    q, k, v = attn.c_attn(x).split(c, dim=2)
    q = q.view(n, t, h, d).transpose(1, 2)
    start, end = cache.length, cache.length + t
    cache.kv[layer, 0, :, :, start:end] = k.view(n, t, h, d).transpose(1, 2)
    cache.kv[layer, 1, :, :, start:end] = v.view(n, t, h, d).transpose(1, 2)
    keys, values = cache.kv[layer, 0, :, :, :end], cache.kv[layer, 1, :, :, :end]
    att = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(d))
    if t > 1:  # the prompt: causal within it (a new token sees every cached position)
        future = torch.ones(t, end, dtype=torch.bool, device=x.device).triu(start + 1)
        att = att.masked_fill(future, float("-inf"))
    y = (F.softmax(att, dim=-1) @ values).transpose(1, 2).reshape(n, t, c)
    return attn.c_proj(y)


def forward_step(model, tokens, cache):
    """Logits of the last position after `tokens` [N, t] at positions cache.length.."""
    t = tokens.size(1)
    positions = torch.arange(cache.length, cache.length + t, device=tokens.device)
    x = model.wte(tokens) + model.wpe(positions)
    for layer, block in enumerate(model.h):
        x = x + attend(block.attn, block.ln_1(x), layer, cache)
        x = x + block.mlp(block.ln_2(x))
    cache.length += t
    last = model.ln_f(x[:, -1])
    return model.lm_head(last) if model.lm_head is not None else F.linear(last, model.wte.weight)


def generate(model, prompts, max_new, n_layer, n_head, n_embd):
    rows, length = prompts.shape
    cache = Cache(n_layer, rows, n_head, length + max_new, n_embd // n_head, prompts.device)
    made = []
    logits = forward_step(model, prompts, cache)
    for position in range(max_new):
        token = torch.argmax(logits, dim=-1)
        made.append(token)
        if position + 1 < max_new:
            logits = forward_step(model, token.unsqueeze(1), cache)
    return torch.stack(made, dim=1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint")
    p.add_argument("prompts")
    p.add_argument("shape", type=int, nargs=7,
                   metavar="VOCAB CONTEXT N_LAYER N_HEAD N_EMBD MAX_NEW BATCH")
    p.add_argument("--rows", default=None, help="FIRST:END, the rows this process continues")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--output", default=None)
    args = p.parse_args()
    vocab, context, n_layer, n_head, n_embd, max_new, batch = args.shape
    torch.set_num_threads(args.threads)
    model = GPT(vocab, context, n_layer, n_head, n_embd)
    with h5py.File(args.checkpoint, "r") as f:
        state = {name: torch.from_numpy(f["model"][name][()]) for name in f["model"]}
    model.load_state_dict(state, strict=True)
    model.eval()
    model.to(args.device)
    with h5py.File(args.prompts, "r") as f:
        tokens, offsets = f["tokens"][()].astype(np.int64), f["offsets"][()]
    lengths = np.diff(offsets)
    if lengths.min() != lengths.max():
        raise SystemExit("pytorch_generate.py: the prompts must all have one length")
    all_rows = torch.from_numpy(tokens).view(len(lengths), int(lengths[0]))
    first, end = (0, len(lengths)) if args.rows is None else map(int, args.rows.split(":"))
    mine = all_rows[first:end].to(args.device)
    cuda = mine.is_cuda
    outputs = []
    with torch.inference_mode():
        if cuda:
            began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            began.record()
        start = time.perf_counter()
        for b in range(0, mine.size(0), batch):
            outputs.append(generate(model, mine[b:b + batch], max_new, n_layer, n_head, n_embd))
        if cuda:
            ended.record()
            ended.synchronize()
        seconds = began.elapsed_time(ended) / 1e3 if cuda else time.perf_counter() - start
    made = torch.cat(outputs).cpu()
    print(f"pytorch: {made.size(0)} rows, {made.numel()} new tokens in {seconds:.3f} s "
          f"({made.numel() / seconds:.0f} tokens/s)")
    if args.output:
        np.save(args.output, made.numpy().reshape(-1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
