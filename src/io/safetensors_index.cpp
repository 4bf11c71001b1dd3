#include "io/safetensors_index.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "util/error.hpp"

namespace ddpt {
namespace {

[[noreturn]] void refuse_index(const std::string& what) {
  throw DataError(what, Raised::kAllRanks);
}

SafetensorsModelFiles read_index(const std::filesystem::path& index) {
  std::ifstream in(index);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) refuse_index(fmt::format("{}: cannot be read", index.string()));
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    refuse_index(fmt::format("{}: not JSON ({})", index.string(), e.what()));
  }
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object() ||
      json["weight_map"].empty()) {
    refuse_index(fmt::format("{}: no \"weight_map\" of tensor names to files", index.string()));
  }
  SafetensorsModelFiles model;
  std::set<std::string> seen;
  for (const auto& [name, file] : json["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos) {
      refuse_index(fmt::format("{}: tensor '{}' is mapped to {}, not a file name in its directory",
                               index.string(), name, file.dump()));
    }
    const std::string path = (index.parent_path() / file.get<std::string>()).string();
    model.weight_map.emplace(name, path);
    if (seen.insert(path).second) model.files.push_back(path);
  }
  return model;
}

}  // namespace

SafetensorsModelFiles safetensors_model_files(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return {{path}, {}};
  const std::filesystem::path single = std::filesystem::path(path) / kSafetensorsSingle;
  if (std::filesystem::exists(single, ec)) return {{single.string()}, {}};
  const std::filesystem::path index = std::filesystem::path(path) / kSafetensorsIndex;
  if (std::filesystem::exists(index, ec)) return read_index(index);
  refuse_index(fmt::format("'{}': a directory without {} or {}", path, kSafetensorsSingle,
                           kSafetensorsIndex));
}

std::vector<std::pair<size_t, size_t>> shard_ranges(const std::vector<int64_t>& bytes,
                                                    int64_t max_shard_bytes) {
  std::vector<std::pair<size_t, size_t>> shards;
  int64_t filled = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (shards.empty() || (filled > 0 && filled + bytes[i] > max_shard_bytes)) {
      shards.emplace_back(i, i);
      filled = 0;
    }
    shards.back().second = i + 1;
    filled += bytes[i];
  }
  return shards;
}

std::string shard_file_name(size_t k, size_t count) {
  return fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, count);
}

std::string safetensors_index_json(const std::map<std::string, std::string>& weight_map,
                                   int64_t total_size) {
  nlohmann::json json;
  json["metadata"]["total_size"] = total_size;
  json["weight_map"] = weight_map;
  return json.dump(2) + "\n";
}

}  // namespace ddpt
