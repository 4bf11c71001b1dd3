// Reading Hugging Face's safetensors files (the format: io/safetensors_writer.hpp). The header is
// parsed with nlohmann::json and checked whole before any tensor is read: its length within the
// file, JSON, one entry per name, a known dtype, a shape and data offsets that agree, every range
// inside the data and none overlapping another. Each tensor is then read by its own byte range
// (pread), so a reader takes only the bytes it asks for (bytes_read() counts them). Reads may
// come from several threads at once.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ddpt {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;
  int64_t begin = 0;  // byte range in the data section, [begin, end)
  int64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in the order of their data
  std::map<std::string, std::string> metadata;
};

// The header's JSON text checked against a data section of `data_bytes` bytes; DataError (exit
// 3) starting with `where` and saying what is wrong. The fuzz target's entry point.
SafetensorsHeader parse_safetensors_header(std::string_view json, int64_t data_bytes,
                                           const std::string& where);

class SafetensorsFile {
 public:
  // Opens and checks `path`; DataError (exit 3) naming the file: missing or unreadable, shorter
  // than its header, or a header parse_safetensors_header refuses.
  explicit SafetensorsFile(std::string path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  const SafetensorsEntry* find(const std::string& name) const;
  // The tensor's values on the host: F32, F16 and BF16 as float32 (exactly), the integer and
  // bool types as their own. DataError if the read fails.
  torch::Tensor read(const SafetensorsEntry& entry) const;
  // Whether the entry holds floating-point values (F32, F16, BF16): what read_floats reads.
  static bool floating(const SafetensorsEntry& entry);
  // `count` runs of `run` elements, the k-th starting at element `first + k * stride` of the
  // floating-point tensor flattened row-major, as float32 into `out`: run k at
  // `out + k * out_stride`, or, `transposed`, element j of run k at `out[j * out_stride + k]`.
  // F32 runs stored as they are wanted go straight into `out` (one pread where the runs touch).
  // The others pass through a cache-sized buffer (one per thread, kept between calls), a few runs
  // at a time, widened and transposed there block by block: no copy of the whole tensor is ever
  // made, and no fresh memory is touched. A rank's slice of a tensor (count 1), a transposed weight
  // (a run per stored row). DataError past the tensor's end or if a read fails.
  void read_floats(const SafetensorsEntry& entry, int64_t first, int64_t run, int64_t stride,
                   int64_t count, float* out, int64_t out_stride, bool transposed) const;
  // Bytes of tensor data read so far.
  int64_t bytes_read() const { return bytes_read_.load(); }

 private:
  void read_bytes(const SafetensorsEntry& entry, char* out) const;
  // The k-th of `count` runs read into out + k * run, one pread where they touch.
  void read_packed_runs(const SafetensorsEntry& entry, int64_t first, int64_t run, int64_t stride,
                        int64_t count, char* out) const;
  // `bytes` bytes at `offset` in the entry's data into `out`.
  void read_range(const SafetensorsEntry& entry, int64_t offset, int64_t bytes, char* out) const;

  std::string path_;
  int fd_ = -1;
  int64_t data_start_ = 0;
  SafetensorsHeader header_;
  mutable std::atomic<int64_t> bytes_read_{0};  // reads may come from several threads
};

}  // namespace ddpt
