"""Writes a GPT-2-layout safetensors file of random float32 weights, as OpenAI's published
gpt2/model.safetensors is laid out (names without `transformer.`, Conv1D weights [in, out], tied
head, no attention-mask buffers): the input of import_speed.sh.
Usage: /usr/bin/python3 make_gpt2_safetensors.py OUT [N_LAYER N_EMBD VOCAB POSITIONS]"""
import json
import struct
import sys

import numpy as np

out = sys.argv[1]
n_layer, n_embd, vocab, positions = (int(a) for a in (sys.argv[2:6] or (12, 768, 50257, 1024)))
shapes = {"wte.weight": (vocab, n_embd), "wpe.weight": (positions, n_embd)}
for i in range(n_layer):
    h = f"h.{i}."
    shapes.update({h + "ln_1.weight": (n_embd,), h + "ln_1.bias": (n_embd,),
                   h + "attn.c_attn.weight": (n_embd, 3 * n_embd), h + "attn.c_attn.bias": (3 * n_embd,),
                   h + "attn.c_proj.weight": (n_embd, n_embd), h + "attn.c_proj.bias": (n_embd,),
                   h + "ln_2.weight": (n_embd,), h + "ln_2.bias": (n_embd,),
                   h + "mlp.c_fc.weight": (n_embd, 4 * n_embd), h + "mlp.c_fc.bias": (4 * n_embd,),
                   h + "mlp.c_proj.weight": (4 * n_embd, n_embd), h + "mlp.c_proj.bias": (n_embd,)})
shapes.update({"ln_f.weight": (n_embd,), "ln_f.bias": (n_embd,)})
header, offset = {}, 0
for name, shape in shapes.items():
    size = 4 * int(np.prod(shape))
    header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
    offset += size
header["__metadata__"] = {"format": "pt"}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
rng = np.random.default_rng(0)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for shape in shapes.values():
        f.write((rng.standard_normal(shape, dtype=np.float32) * 0.02).tobytes())
print(f"{out}: {sum(int(np.prod(s)) for s in shapes.values()):,} parameters, {offset:,} bytes")
