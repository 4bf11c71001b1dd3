#include "io/safetensors_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "io/safetensors_index.hpp"
#include "io/staged_file.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

std::string safetensors_dtype(torch::ScalarType type, const std::string& name,
                              const std::string& path) {
  switch (type) {
    case torch::kFloat:
      return "F32";
    case torch::kHalf:
      return "F16";
    case torch::kBFloat16:
      return "BF16";
    case torch::kLong:
      return "I64";
    case torch::kInt:
      return "I32";
    case torch::kByte:
      return "U8";
    case torch::kBool:
      return "BOOL";
    default:
      throw DataError(fmt::format("{}: tensor '{}' is {}, which safetensors export does not write",
                                  path, name, c10::toString(type)),
                      Raised::kThisRank);
  }
}

// A JSON string of text made of printable ASCII (names and metadata are ddptrain's own); other
// bytes escaped as \u00XX.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += fmt::format("\\u{:04x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<torch::Tensor> host;
  std::string header = "{";
  int64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    host.push_back(tensor.detach().to(torch::kCPU).contiguous());
    const int64_t bytes = host.back().numel() * static_cast<int64_t>(host.back().element_size());
    header += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}},",
                          json_string(name), safetensors_dtype(tensor.scalar_type(), name, path),
                          fmt::join(tensor.sizes(), ","), offset, offset + bytes);
    offset += bytes;
  }
  std::vector<std::string> pairs;
  for (const auto& [key, value] : metadata)
    pairs.push_back(json_string(key) + ":" + json_string(value));
  header += fmt::format("\"__metadata__\":{{{}}}}}", fmt::join(pairs, ","));
  header.append((8 - header.size() % 8) % 8, ' ');  // the tensors' bytes start 8-byte aligned

  write_staged_file(path, [&](std::ostream& out) {
    const uint64_t length = header.size();
    unsigned char length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(length >> (8 * i));
    out.write(reinterpret_cast<const char*>(length_bytes), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    // x86 and ARM hosts are little-endian, as the format is.
    for (const torch::Tensor& t : host) {
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.numel() * static_cast<int64_t>(t.element_size())));
    }
  });
}

namespace {

// The files of an earlier export that are not among `written`: a single file beside shards, or
// shards beside a single file, would leave two models in one directory.
void remove_other_model_files(const std::filesystem::path& dir,
                              const std::vector<std::string>& written) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool model_file =
        name == kSafetensorsSingle || name == kSafetensorsIndex ||
        (name.rfind("model-", 0) == 0 && name.find("-of-") != std::string::npos &&
         entry.path().extension() == ".safetensors");
    if (model_file &&
        std::find(written.begin(), written.end(), entry.path().string()) == written.end()) {
      std::filesystem::remove(entry.path());
    }
  }
}

}  // namespace

std::vector<std::string> write_safetensors_model(
    const std::filesystem::path& dir,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata, int64_t max_shard_bytes) {
  std::vector<int64_t> bytes;
  for (const auto& [name, t] : tensors)
    bytes.push_back(t.numel() * static_cast<int64_t>(t.element_size()));
  const auto shards = shard_ranges(bytes, max_shard_bytes);
  std::vector<std::string> written;
  if (shards.size() <= 1) {
    written.push_back((dir / kSafetensorsSingle).string());
    write_safetensors(written.back(), tensors, metadata);
  } else {
    std::map<std::string, std::string> weight_map;
    for (size_t k = 0; k < shards.size(); ++k) {
      const std::string name = shard_file_name(k, shards.size());
      written.push_back((dir / name).string());
      const std::vector<std::pair<std::string, torch::Tensor>> part(
          tensors.begin() + static_cast<long>(shards[k].first),
          tensors.begin() + static_cast<long>(shards[k].second));
      for (const auto& [tensor, value] : part) weight_map.emplace(tensor, name);
      write_safetensors(written.back(), part, metadata);
    }
    // Last: a reader that finds the index finds every shard it names.
    const std::string json =
        safetensors_index_json(weight_map, std::accumulate(bytes.begin(), bytes.end(), int64_t{0}));
    written.push_back((dir / kSafetensorsIndex).string());
    write_staged_file(written.back(), [&](std::ostream& out) { out << json; });
  }
  remove_other_model_files(dir, written);
  return written;
}

}  // namespace ddpt
