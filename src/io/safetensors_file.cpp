#include "io/safetensors_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

#include "util/error.hpp"
#include "util/transposed_copy.hpp"

namespace ddpt {
namespace {

using Json = nlohmann::json;

struct DtypeInfo {
  int64_t bytes;
  torch::ScalarType type;
};

// The dtypes ddptrain reads; safetensors names a few more (F64, I8, U16, F8_*...), refused here.
const std::map<std::string, DtypeInfo>& known_dtypes() {
  static const std::map<std::string, DtypeInfo> dtypes = {
      {"F32", {4, torch::kFloat}}, {"F16", {2, torch::kHalf}}, {"BF16", {2, torch::kBFloat16}},
      {"I64", {8, torch::kLong}},  {"I32", {4, torch::kInt}},  {"U8", {1, torch::kByte}},
      {"BOOL", {1, torch::kBool}},
  };
  return dtypes;
}

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw DataError(where + ": " + what, Raised::kAllRanks);
}

int64_t whole_number(const Json& value, const std::string& where, const std::string& what) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    refuse(where, what + " is not a whole number of 0 or more: " + value.dump());
  }
  return value.get<int64_t>();
}

SafetensorsEntry entry_of(const std::string& name, const Json& info, const std::string& where) {
  const std::string at = fmt::format("{}: tensor '{}'", where, name);
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
      !info.contains("data_offsets")) {
    refuse(at, "needs \"dtype\", \"shape\" and \"data_offsets\"");
  }
  SafetensorsEntry entry;
  entry.name = name;
  if (!info["dtype"].is_string()) refuse(at, "\"dtype\" is not a string");
  entry.dtype = info["dtype"].get<std::string>();
  const auto dtype = known_dtypes().find(entry.dtype);
  if (dtype == known_dtypes().end()) {
    refuse(at, "dtype '" + entry.dtype +
                   "' is not one ddptrain reads (F32, F16, BF16, I64, I32, "
                   "U8, BOOL)");
  }
  const Json& shape = info["shape"];
  const Json& offsets = info["data_offsets"];
  if (!shape.is_array()) refuse(at, "\"shape\" is not a list");
  if (!offsets.is_array() || offsets.size() != 2)
    refuse(at, "\"data_offsets\" is not [begin, end]");
  int64_t elements = 1;
  for (const Json& size : shape) {
    const int64_t n = whole_number(size, at, "a size of its shape");
    if (n > 0 && elements > std::numeric_limits<int64_t>::max() / 16 / n) {
      refuse(at, "shape " + shape.dump() + " is too large");
    }
    elements *= n;
    entry.shape.push_back(n);
  }
  entry.begin = whole_number(offsets[0], at, "its first data offset");
  entry.end = whole_number(offsets[1], at, "its second data offset");
  if (entry.end < entry.begin || entry.end - entry.begin != elements * dtype->second.bytes) {
    refuse(at, fmt::format("data_offsets [{}, {}] hold {} bytes, and shape {} of {} needs {}",
                           entry.begin, entry.end, entry.end - entry.begin, shape.dump(),
                           entry.dtype, elements * dtype->second.bytes));
  }
  return entry;
}

// The JSON object, refusing a name given twice (nlohmann keeps the last one silently).
Json parse_object(std::string_view text, const std::string& where) {
  std::set<std::string> names;
  std::string twice;
  const Json::parser_callback_t note_names = [&](int depth, Json::parse_event_t event,
                                                 Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && twice.empty() &&
        !names.insert(parsed.get<std::string>()).second) {
      twice = parsed.get<std::string>();
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(text.begin(), text.end(), note_names);
  } catch (const Json::exception& e) {
    refuse(where, fmt::format("the header is not JSON ({})", e.what()));
  }
  if (!twice.empty()) refuse(where, "the header names tensor '" + twice + "' twice");
  if (!header.is_object()) refuse(where, "the header is not a JSON object");
  return header;
}

// read_floats' buffer: small enough to stay in a core's cache between the read and the
// conversion that follows it (a whole GPT-2 Conv1D weight, 9 MiB, would not).
constexpr int64_t kConvertBufferBytes = 512 << 10;
// Transposed, the runs converted per pass: each pass writes a stretch of this many floats into
// every row of the model's tensor, two cache lines (util/transposed_copy.hpp). For GPT-2's Conv1D
// weights (a 2-core Xeon VM, 768 x 2304 floats) 32 runs a pass went at 15.5-16.0 GB/s, 64 at
// 14.6-15.3, 16 at 10.1-10.3 (memcpy of the same bytes 6.3-6.7).
constexpr int64_t kTransposedRunsPerPass = 32;

// `runs` runs of `run` values each, packed in `in`, as float32 into `out` (read_floats' layouts):
// run k at out + k * out_stride, or, transposed, its element j at out[j * out_stride + k].
template <typename T>
void convert_runs(const T* in, int64_t runs, int64_t run, float* out, int64_t out_stride,
                  bool transposed) {
  if (!transposed) {
    for (int64_t k = 0; k < runs; ++k) {
      const T* from = in + k * run;
      float* to = out + k * out_stride;
      for (int64_t j = 0; j < run; ++j) to[j] = static_cast<float>(from[j]);
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    transposed_copy(in, runs, run, out, out_stride);
  } else {  // widened first, in a second cache-sized buffer
    thread_local std::vector<float> widened;
    widened.resize(static_cast<size_t>(runs * run));
    convert_runs(in, runs, run, widened.data(), run, /*transposed=*/false);
    transposed_copy(widened.data(), runs, run, out, out_stride);
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view json, int64_t data_bytes,
                                           const std::string& where) {
  const Json header = parse_object(json, where);
  SafetensorsHeader result;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) refuse(where, "\"__metadata__\" is not an object");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) refuse(where, "metadata '" + key + "' is not a string");
        result.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    result.entries.push_back(entry_of(name, info, where));
  }
  std::sort(result.entries.begin(), result.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  int64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& e : result.entries) {
    if (e.end > data_bytes) {
      refuse(where, fmt::format("tensor '{}' ends at byte {} of the data, which holds {} (a "
                                "truncated file?)",
                                e.name, e.end, data_bytes));
    }
    if (previous != nullptr && e.begin < covered && e.end > e.begin) {
      refuse(where, fmt::format("tensors '{}' and '{}' overlap", previous->name, e.name));
    }
    if (e.end > e.begin) {
      covered = std::max(covered, e.end);
      previous = &e;
    }
  }
  return result;
}

SafetensorsFile::SafetensorsFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) refuse(path_, std::strerror(errno));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) refuse(path_, std::strerror(errno));
    const int64_t size = st.st_size;
    unsigned char length_bytes[8];
    if (size < 8 || ::pread(fd_, length_bytes, 8, 0) != 8) {
      refuse(path_, "shorter than the 8 bytes of a safetensors header length");
    }
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
    if (length > static_cast<uint64_t>(size - 8)) {
      refuse(path_, fmt::format("the header length {} runs past the end of the file ({} bytes)",
                                length, size));
    }
    std::string json(length, '\0');
    if (::pread(fd_, json.data(), length, 8) != static_cast<ssize_t>(length)) {
      refuse(path_, "the header cannot be read");
    }
    data_start_ = 8 + static_cast<int64_t>(length);
    header_ = parse_safetensors_header(json, size - data_start_, path_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsEntry& e : header_.entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

void SafetensorsFile::read_range(const SafetensorsEntry& entry, int64_t offset, int64_t bytes,
                                 char* out) const {
  int64_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd_, out + done, static_cast<size_t>(bytes - done),
                                data_start_ + entry.begin + offset + done);
    if (got <= 0) {
      refuse(path_, fmt::format("tensor '{}' cannot be read ({})", entry.name,
                                got == 0 ? "end of file" : std::strerror(errno)));
    }
    done += got;
  }
  bytes_read_ += bytes;
}

void SafetensorsFile::read_bytes(const SafetensorsEntry& entry, char* out) const {
  read_range(entry, 0, entry.end - entry.begin, out);
}

torch::Tensor SafetensorsFile::read(const SafetensorsEntry& entry) const {
  const torch::ScalarType type = known_dtypes().at(entry.dtype).type;
  torch::Tensor values = torch::empty(entry.shape, torch::TensorOptions(type));
  read_bytes(entry, static_cast<char*>(values.data_ptr()));
  // Float16 and bfloat16 widen to float32 exactly.
  return type == torch::kHalf || type == torch::kBFloat16 ? values.to(torch::kFloat) : values;
}

bool SafetensorsFile::floating(const SafetensorsEntry& entry) {
  return entry.dtype == "F32" || entry.dtype == "F16" || entry.dtype == "BF16";
}

void SafetensorsFile::read_packed_runs(const SafetensorsEntry& entry, int64_t first, int64_t run,
                                       int64_t stride, int64_t count, char* out) const {
  const int64_t bytes = known_dtypes().at(entry.dtype).bytes;
  if (stride == run || count <= 1) {
    read_range(entry, first * bytes, count * run * bytes, out);
    return;
  }
  for (int64_t k = 0; k < count; ++k) {
    read_range(entry, (first + k * stride) * bytes, run * bytes, out + k * run * bytes);
  }
}

void SafetensorsFile::read_floats(const SafetensorsEntry& entry, int64_t first, int64_t run,
                                  int64_t stride, int64_t count, float* out, int64_t out_stride,
                                  bool transposed) const {
  const DtypeInfo& dtype = known_dtypes().at(entry.dtype);
  const int64_t numel = (entry.end - entry.begin) / dtype.bytes;
  if (!floating(entry) || first < 0 || run < 0 || count < 0 || stride < run ||
      (count > 0 && run > 0 && first + (count - 1) * stride + run > numel)) {
    refuse(path_, fmt::format("tensor '{}' ({}): {} runs of {} elements from element {} (stride "
                              "{}) are not floating-point values within its {} elements",
                              entry.name, entry.dtype, count, run, first, stride, numel));
  }
  if (run == 0 || count == 0) return;
  char* const bytes_out = reinterpret_cast<char*>(out);
  if (dtype.type == torch::kFloat && !transposed) {
    if (out_stride == run) {
      read_packed_runs(entry, first, run, stride, count, bytes_out);
    } else {
      for (int64_t k = 0; k < count; ++k) {
        read_range(entry, (first + k * stride) * 4, run * 4, bytes_out + k * out_stride * 4);
      }
    }
    return;
  }
  // Passes of `runs` runs at a time, each run in pieces of `piece` elements, within the buffer.
  const int64_t runs = std::clamp<int64_t>(kConvertBufferBytes / (run * dtype.bytes), 1,
                                           transposed ? kTransposedRunsPerPass : count);
  const int64_t piece = std::min<int64_t>(run, kConvertBufferBytes / (runs * dtype.bytes));
  // One per thread: a model's tensors are read on several at once (setup/initial_weights.cpp).
  thread_local std::vector<char> buffer;
  buffer.resize(static_cast<size_t>(kConvertBufferBytes));
  for (int64_t k = 0; k < count; k += runs) {
    const int64_t n = std::min(runs, count - k);
    for (int64_t j = 0; j < run; j += piece) {
      const int64_t m = std::min(piece, run - j);
      read_packed_runs(entry, first + k * stride + j, m, stride, n, buffer.data());
      float* const to = transposed ? out + j * out_stride + k : out + k * out_stride + j;
      if (dtype.type == torch::kFloat) {
        convert_runs(reinterpret_cast<const float*>(buffer.data()), n, m, to, out_stride,
                     transposed);
      } else if (dtype.type == torch::kHalf) {
        convert_runs(reinterpret_cast<const c10::Half*>(buffer.data()), n, m, to, out_stride,
                     transposed);
      } else {
        convert_runs(reinterpret_cast<const c10::BFloat16*>(buffer.data()), n, m, to, out_stride,
                     transposed);
      }
    }
  }
}

}  // namespace ddpt
