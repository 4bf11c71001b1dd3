// A model split over several safetensors files, as Hugging Face saves one above its shard size:
// model-00001-of-0000N.safetensors ... and model.safetensors.index.json, whose "weight_map" names
// each tensor's file ({"metadata": {"total_size": BYTES}, "weight_map": {"NAME": "FILE", ...}}).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ddpt {

inline constexpr const char* kSafetensorsSingle = "model.safetensors";
inline constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";

// The files of a model at a path, and for shards what the index says of each tensor.
struct SafetensorsModelFiles {
  std::vector<std::string> files;                 // read in this order
  std::map<std::string, std::string> weight_map;  // tensor -> its file (shards only)
};

// `path`: a safetensors file, or a directory holding model.safetensors or else an index. DataError
// (exit 3) naming the path or the index: a directory with neither, an index that is not JSON with
// a "weight_map" of names to file names in its directory.
SafetensorsModelFiles safetensors_model_files(const std::string& path);

// Tensors of `bytes` each, in order, cut into shards of at most `max_shard_bytes` (a tensor larger
// than that alone in its own): each shard's first tensor and one past its last.
std::vector<std::pair<size_t, size_t>> shard_ranges(const std::vector<int64_t>& bytes,
                                                    int64_t max_shard_bytes);
// Shard `k` (0-based) of `count`: "model-0000K+1-of-0000COUNT.safetensors".
std::string shard_file_name(size_t k, size_t count);
// The index's JSON text.
std::string safetensors_index_json(const std::map<std::string, std::string>& weight_map,
                                   int64_t total_size);

}  // namespace ddpt
