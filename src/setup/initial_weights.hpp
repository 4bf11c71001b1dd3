// model.init = PATH: the weights a run starts from, loaded before step 1 (the optimizer starts
// fresh, from step 0). PATH is a safetensors file, a directory holding model.safetensors or
// Hugging Face's shards and model.safetensors.index.json (io/safetensors_index.hpp), or a
// ddptrain checkpoint (.h5).
//
// The built-in GPT reads GPT-2's layout, as published and as `ddptrain export` writes it: names
// with or without the `transformer.` prefix, the four Conv1D weights per block stored [in, out]
// (transposed here), no lm_head when tied (one in the file is ignored), lm_head when untied, the
// buffers `.attn.bias` and `.attn.masked_bias` skipped; F32, F16 or BF16 values; a vocabulary
// smaller than model.vocab padded with rows of zeros (GPT-2's 50257 in a model of 50304). Other
// models read their own parameter and buffer names. A tensor the model has and the file lacks,
// or the other way round, or of another shape, is an error naming it (exit 3), unless
// model.init_skip names it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/model.hpp"

namespace ddpt {

// Whether `path` is an HDF5 file (a ddptrain checkpoint) by its signature; else a safetensors
// file or directory.
bool is_hdf5_file(const std::string& path);

// Loads `path` into `model` (on the host, before it is placed or sharded); every rank reads the
// file itself. `gpt`: the built-in GPT's layout rules above. `skip` (model.init_skip): globs on
// the model's tensor names left as initialised: not required in the file, not read from it.
// DataError (exit 3) naming the file; ConfigError (exit 2) for a glob that matches nothing.
// Returns the bytes of tensor data this process read (safetensors; nullopt for a checkpoint).
std::optional<int64_t> load_initial_weights(const std::string& path, Model& model, bool gpt,
                                            const std::string& skip = "");

}  // namespace ddpt
