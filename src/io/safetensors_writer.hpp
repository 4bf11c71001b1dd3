// Tensors in Hugging Face's safetensors format, which transformers, vLLM, llama.cpp's converters
// and the `safetensors` library read: an 8-byte little-endian header length N, N bytes of JSON
// (`{"NAME": {"dtype": "F32", "shape": [...], "data_offsets": [BEGIN, END]}, ...,
// "__metadata__": {"KEY": "VALUE"}}`, padded with spaces to a multiple of 8), then the tensors'
// bytes, row-major and little-endian, each at its offsets from the end of the header.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ddpt {

// Writes `tensors` (on any device; float32, float16, bfloat16, int64, int32, uint8 or bool) in
// that order to `path`, staged and renamed into place (io/staged_file.hpp), with string
// `metadata`. DataError (exit 3) naming the file when it cannot be written, or a tensor of
// another dtype.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata);

// A model's `tensors` into the directory `dir` as Hugging Face saves one: model.safetensors where
// the whole is at most `max_shard_bytes`, else shards of at most that many bytes each
// (io/safetensors_index.hpp) and the index naming each tensor's shard, written last. What an
// earlier export of the other form left in `dir` is removed. Returns the files written.
std::vector<std::string> write_safetensors_model(
    const std::filesystem::path& dir,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata, int64_t max_shard_bytes);

}  // namespace ddpt
