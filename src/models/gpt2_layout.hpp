// GPT-2's published layout of the built-in GPT's tensors (Hugging Face's GPT2LMHeadModel, as in
// its model.safetensors): the same names, with or without a `transformer.` prefix; four weights
// per block kept as Conv1D, [in, out], where the built-in GPT keeps a Linear's [out, in]; the
// attention masks `.attn.bias` and `.attn.masked_bias` stored as buffers, which the built-in GPT
// does not have. What `ddptrain export` writes and model.init reads.
#pragma once

#include <string>

namespace ddpt {

// Whether `name` (the built-in GPT's) is one of the four weights GPT-2 stores transposed.
bool gpt2_conv1d_weight(const std::string& name);

// The built-in GPT's name for a tensor of a GPT-2 file: the prefix dropped; "" for the attention
// masks, which have no counterpart.
std::string gpt_name_of_gpt2(const std::string& gpt2_name);

}  // namespace ddpt
