#include "io/safetensors_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

}  // namespace ddpt
