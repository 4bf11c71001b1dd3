#!/usr/bin/python3
"""Greedy generation in PyTorch with a ddptrain checkpoint's weights, against ddptrain's file.

share/ddptrain/models/gpt.py (the built-in GPT's architecture and names) gets the checkpoint's
/model tensors; each prompt is continued one token at a time over its whole window, as
`ddptrain generate` does, up to MAX_NEW tokens or the CONTEXT. The new tokens, the offsets and
/finish must equal the generations file's, and each token's log-probability (log-softmax of the
logits) be within 1e-4.

Usage: generate_reference.py CHECKPOINT PROMPTS.h5 GENERATIONS.h5 VOCAB CONTEXT N_LAYER N_HEAD
       N_EMBD MAX_NEW
"""
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../share/ddptrain/models"))
from gpt import GPT  # noqa: E402


def main() -> int:
    checkpoint, prompts_path, generations_path = sys.argv[1:4]
    vocab, context, n_layer, n_head, n_embd, max_new = (int(a) for a in sys.argv[4:10])
    model = GPT(vocab, context, n_layer, n_head, n_embd)
    with h5py.File(checkpoint, "r") as f:
        state = {name: torch.from_numpy(f["model"][name][()]) for name in f["model"]}
    model.load_state_dict(state, strict=True)
    model.eval()
    with h5py.File(prompts_path, "r") as f:
        tokens, offsets = f["tokens"][()].astype(np.int64), f["offsets"][()]
    new_tokens, new_offsets, finishes, logprobs = [], [0], [], []
    with torch.no_grad():
        for row in range(len(offsets) - 1):
            window = torch.from_numpy(tokens[offsets[row]:offsets[row + 1]]).unsqueeze(0)
            made = 0
            finish = 2 if window.size(1) >= context else None
            while finish is None:
                logits = model(window)[0, -1].double()
                token = int(torch.argmax(logits))
                logprobs.append(float(torch.log_softmax(logits, 0)[token]))
                new_tokens.append(token)
                made += 1
                window = torch.cat([window, torch.tensor([[token]])], 1)
                if made >= max_new:
                    finish = 0
                elif window.size(1) >= context:
                    finish = 2
            new_offsets.append(len(new_tokens))
            finishes.append(finish)
    with h5py.File(generations_path, "r") as f:
        got = {name: f[name][()] for name in ("tokens", "offsets", "finish", "logprobs")}
    rows = len(offsets) - 1
    if not np.array_equal(got["offsets"], new_offsets):
        print(f"offsets differ: ddptrain {got['offsets'][:10]}, PyTorch {new_offsets[:10]}")
        return 1
    if not np.array_equal(got["finish"], finishes):
        print(f"/finish differs: ddptrain {got['finish'][:10]}, PyTorch {finishes[:10]}")
        return 1
    if not np.array_equal(got["tokens"], new_tokens):
        bad = next(i for i in range(len(new_tokens)) if got["tokens"][i] != new_tokens[i])
        print(f"tokens differ first at new token {bad}")
        return 1
    worst = float(np.max(np.abs(got["logprobs"].astype(np.float64) - np.array(logprobs))))
    if not worst <= 1e-4:
        print(f"log-probabilities differ by up to {worst}")
        return 1
    print(f"{rows} prompts, {len(new_tokens)} new tokens: the same tokens and finish as PyTorch, "
          f"log-probabilities within {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
