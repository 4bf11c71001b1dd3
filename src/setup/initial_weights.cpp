#include "setup/initial_weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "h5/h5_file.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors_file.hpp"
#include "io/safetensors_index.hpp"
#include "models/gpt2_layout.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"
#include "util/glob_list.hpp"
#include "util/stopwatch.hpp"
#include "util/task_threads.hpp"

namespace ddpt {
namespace {

// The model's name for a tensor of the file, "" for one to skip (GPT-2's attention masks).
std::string model_name(const std::string& file_name, bool gpt) {
  return gpt ? gpt_name_of_gpt2(file_name) : file_name;
}

std::string first_few(const std::vector<std::string>& names) {
  const size_t shown = std::min<size_t>(names.size(), 5);
  return fmt::format("{}{}",
                     fmt::join(names.begin(), names.begin() + static_cast<long>(shown), ", "),
                     names.size() > shown ? fmt::format(" and {} more", names.size() - shown) : "");
}

bool vocab_rows(const std::string& name, bool gpt) {
  return gpt && (name == "wte.weight" || name == "lm_head.weight");
}

// The entry's shape as the model keeps it (GPT-2's Conv1D weights transposed).
std::vector<int64_t> model_shape(const SafetensorsEntry& entry, const std::string& name, bool gpt) {
  std::vector<int64_t> shape = entry.shape;
  if (gpt && gpt2_conv1d_weight(name) && shape.size() == 2) std::swap(shape[0], shape[1]);
  return shape;
}

// Whether the entry is a GPT's embedding or head of fewer rows than the model's (padded with
// zero rows).
bool padded_rows(const SafetensorsEntry& entry, const torch::Tensor& target,
                 const std::string& name, bool gpt) {
  return vocab_rows(name, gpt) && entry.shape.size() == 2 && target.dim() == 2 &&
         entry.shape[1] == target.size(1) && entry.shape[0] < target.size(0);
}

void check_shape(const SafetensorsEntry& entry, const torch::Tensor& target,
                 const std::string& name, const std::string& where, bool gpt) {
  const std::vector<int64_t> shape = model_shape(entry, name, gpt);
  if (c10::IntArrayRef(shape) == target.sizes() || padded_rows(entry, target, name, gpt)) return;
  throw DataError(
      fmt::format("{}: tensor '{}' is [{}] there and [{}] in the deck's model: set the model "
                  "options (model.n_layer, n_head, n_embd, vocab, block) to the file's sizes",
                  where, name, fmt::join(shape, ", "), fmt::join(target.sizes(), ", ")),
      Raised::kAllRanks);
}

// `value` (the file's, of a shape check_shape took, GPT-2's orientation undone) into `target`; a
// GPT's embedding or head of fewer rows than the model's is padded with zeros. For the tensors
// read_elements does not take (integer values, or a model tensor other than float32).
void copy_into(torch::Tensor& target, torch::Tensor value, const std::string& name, bool gpt) {
  if (gpt && gpt2_conv1d_weight(name) && value.dim() == 2) value = value.t();
  torch::NoGradGuard no_grad;
  if (value.sizes() != target.sizes()) {
    target.zero_();
    target.narrow(0, 0, value.size(0)).copy_(value);
  } else {
    target.copy_(value);
  }
}

}  // namespace

// A model tensor and where the files hold it.
struct MatchedTensor {
  std::string name;  // the model's
  const SafetensorsFile* file = nullptr;
  const SafetensorsEntry* entry = nullptr;
  torch::Tensor target;  // the model's tensor (under ZeRO-3 a parameter may have no memory)
};

struct MatchedWeights {
  std::string path;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::vector<MatchedTensor> tensors;   // in the files' order
  std::map<std::string, size_t> index;  // the model's name -> tensors[]
  int64_t left = 0;                     // as initialised, by model.init_skip

  int64_t bytes_read() const {
    int64_t bytes = 0;
    for (const auto& file : files) bytes += file->bytes_read();
    return bytes;
  }
  int64_t bytes_in_files() const {  // of tensor data
    int64_t bytes = 0;
    for (const auto& file : files) {
      for (const SafetensorsEntry& e : file->header().entries) bytes += e.end - e.begin;
    }
    return bytes;
  }
};

namespace {

// What one match has found so far, over every file of the model.
struct FoundNames {
  explicit FoundNames(const std::string& skip) : skip(skip) {}
  GlobList skip;                               // model.init_skip: names neither read nor required
  std::vector<std::string> unknown;            // the file's names the model lacks
  std::map<std::string, std::string> file_of;  // the file's name -> the file it came from
};

// The tensors of one safetensors file matched to the model's `wanted`; a name a shard before held
// too is DataError, as is a shape the model does not have.
void match_file(const SafetensorsFile& file, const std::map<std::string, torch::Tensor>& wanted,
                bool gpt, FoundNames& found, MatchedWeights& matched) {
  const bool tied = gpt && wanted.count("lm_head.weight") == 0;
  for (const SafetensorsEntry& entry : file.header().entries) {
    const auto [earlier, first] = found.file_of.emplace(entry.name, file.path());
    if (!first) {
      throw DataError(
          fmt::format("tensor '{}' is in both {} and {}", entry.name, earlier->second, file.path()),
          Raised::kAllRanks);
    }
    const std::string name = model_name(entry.name, gpt);
    if (name.empty() || (tied && name == "lm_head.weight") || found.skip.matches(name)) continue;
    const auto target = wanted.find(name);
    if (target == wanted.end()) {
      found.unknown.push_back(entry.name);
      continue;
    }
    check_shape(entry, target->second, name, file.path(), gpt);
    matched.index[name] = matched.tensors.size();
    matched.tensors.push_back({name, &file, &entry, target->second});
  }
}

// Every tensor the index names is in the file it names.
void check_weight_map(const SafetensorsModelFiles& files, const FoundNames& found,
                      const std::string& path) {
  for (const auto& [name, file] : files.weight_map) {
    const auto at = found.file_of.find(name);
    if (at == found.file_of.end() || at->second != file) {
      throw DataError(fmt::format("{}/{}: tensor '{}' is not in {}, where the index puts it", path,
                                  kSafetensorsIndex, name, file),
                      Raised::kAllRanks);
    }
  }
}

// The files at `path` opened and checked against the model; nothing of the tensors read.
std::unique_ptr<MatchedWeights> match_weights(const std::string& path, Model& model, bool gpt,
                                              const std::string& skip) {
  const SafetensorsModelFiles files = safetensors_model_files(path);
  std::map<std::string, torch::Tensor> wanted;
  for (const NamedTensor& p : model.named_parameters()) wanted.emplace(p.name, p.tensor);
  for (const NamedTensor& b : model.named_buffers()) wanted.emplace(b.name, b.tensor);
  auto matched = std::make_unique<MatchedWeights>();
  matched->path = path;
  FoundNames found(skip);
  for (const std::string& file : files.files) {
    matched->files.push_back(std::make_unique<SafetensorsFile>(file));
    match_file(*matched->files.back(), wanted, gpt, found, *matched);
  }
  check_weight_map(files, found, path);
  std::vector<std::string> missing;
  for (const auto& [name, tensor] : wanted) {
    if (matched->index.count(name) != 0) continue;
    if (found.skip.matches(name)) {
      ++matched->left;
    } else {
      missing.push_back(name);
    }
  }
  for (const std::string& glob : found.skip.unused()) {
    throw ConfigError("option 'model.init_skip': pattern '" + glob + "' matches no tensor of " +
                      path + " or of the deck's model");
  }
  if (!found.unknown.empty() || !missing.empty()) {
    throw DataError(
        fmt::format(
            "model.init '{}' does not fit the deck's model:{}{}{}", path,
            found.unknown.empty() ? "" : " the model has no " + first_few(found.unknown) + ";",
            missing.empty() ? "" : " the file has no " + first_few(missing),
            " (model.init_skip leaves tensors as initialised)"),
        Raised::kAllRanks);
  }
  return matched;
}

// Whether the file holds `t` transposed against the model (GPT-2's Conv1D weights).
bool stored_transposed(const MatchedTensor& t, bool gpt) {
  return gpt && gpt2_conv1d_weight(t.name) && t.entry->shape.size() == 2;
}

// Elements [first, first + count) of the model's tensor `t`, flattened row-major as the model
// keeps it, from the file into `out` as float32: a whole tensor, or a rank's piece of it under
// ZeRO-3. Stored as the model keeps it, the piece is one byte range; a padded vocabulary's missing
// rows are the tail, zeros. A GPT-2 Conv1D weight (stored [in, out], kept [out, in]): whole rows of
// the model's are one run per file row over the band of columns they are, transposed on the way
// in; a part of a row (at most one at each end of a piece) is one element per file row.
void read_elements(const MatchedTensor& t, int64_t first, int64_t count, float* out, bool gpt) {
  const SafetensorsEntry& entry = *t.entry;
  const SafetensorsFile& file = *t.file;
  if (stored_transposed(t, gpt)) {
    const int64_t rows = entry.shape[1];  // the model's
    const int64_t cols = entry.shape[0];
    for (int64_t at = first, end = first + count; at < end;) {
      const int64_t row = at / cols;
      const int64_t col = at % cols;
      if (col == 0 && end - at >= cols) {
        const int64_t whole = (end - at) / cols;
        file.read_floats(entry, row, whole, rows, cols, out, cols, /*transposed=*/true);
        at += whole * cols;
        out += whole * cols;
      } else {
        const int64_t part = std::min(cols - col, end - at);
        file.read_floats(entry, col * rows + row, 1, rows, part, out, 1, /*transposed=*/false);
        at += part;
        out += part;
      }
    }
    return;
  }
  const int64_t stored = c10::multiply_integers(entry.shape);
  const int64_t in_file = std::clamp<int64_t>(stored - first, 0, count);
  if (in_file > 0) file.read_floats(entry, first, in_file, in_file, 1, out, in_file, false);
  std::fill(out + in_file, out + count, 0.0F);
}

// Whether the tensor's values go through read_floats straight into the model's memory; the rest
// (integer values, a model tensor other than float32) are read whole and copied.
bool read_as_floats(const MatchedTensor& t) {
  return SafetensorsFile::floating(*t.entry) && t.target.device().is_cpu() &&
         t.target.scalar_type() == torch::kFloat && t.target.is_contiguous();
}

// The rows of the tensor as the file stores it (its first dimension; a scalar is one row).
int64_t stored_rows(const SafetensorsEntry& entry) {
  return entry.shape.empty() ? 1 : entry.shape[0];
}

// Rows [row, row + rows) of the file's tensor to their place in the model's (read_as_floats):
// stored as the model keeps it, one byte range; a GPT-2 Conv1D weight's file row i is the model's
// column i, so a band of them is transposed on the way in, a few rows at a time.
void read_stored_rows(const MatchedTensor& t, int64_t row, int64_t rows, bool gpt) {
  const SafetensorsEntry& entry = *t.entry;
  float* const model = t.target.data_ptr<float>();
  const int64_t row_numel =
      rows == 0 ? 0 : c10::multiply_integers(entry.shape) / stored_rows(entry);
  if (stored_transposed(t, gpt)) {
    t.file->read_floats(entry, row * row_numel, row_numel, row_numel, rows, model + row,
                        entry.shape[0], /*transposed=*/true);
  } else {
    const int64_t count = rows * row_numel;
    t.file->read_floats(entry, row * row_numel, count, count, 1, model + row * row_numel, count,
                        /*transposed=*/false);
  }
}

// The model's elements past the file's: a padded vocabulary's rows, zeros.
void zero_padding(const MatchedTensor& t) {
  const int64_t stored = c10::multiply_integers(t.entry->shape);
  if (t.target.numel() > stored) {
    t.target.view(-1).narrow(0, stored, t.target.numel() - stored).zero_();
  }
}

void read_whole(const MatchedTensor& t, bool gpt) {
  torch::NoGradGuard no_grad;
  if (read_as_floats(t)) {
    zero_padding(t);
    read_stored_rows(t, 0, stored_rows(*t.entry), gpt);
  } else {
    torch::Tensor target = t.target;
    copy_into(target, t.file->read(*t.entry), t.name, gpt);
  }
}

// A part of one tensor's read: rows [row, row + rows) of the file's tensor.
struct ImportPart {
  const MatchedTensor* tensor;
  int64_t row;
  int64_t rows;
};

// The size of the parts the threads share a model's read in: small against the whole, so that
// they finish together; large against a pread's cost.
constexpr int64_t kImportPartBytes = 4 << 20;
constexpr int64_t kFloatsPerLine = 16;  // of 64 bytes

// Every tensor read into the model: the parts on as many threads as the process computes on
// (LibTorch's intra-op threads), each taking the next part as it is free. One thread imports
// GPT-2 at about 0.8-0.9 of the rate dd reads the page cache, two at about 1.5-1.6
// (share/doc/ddptrain/benchmarks.md, import_speed.sh).
void read_all(const MatchedWeights& matched, bool gpt) {
  torch::NoGradGuard no_grad;
  std::vector<ImportPart> parts;
  for (const MatchedTensor& t : matched.tensors) {
    if (!read_as_floats(t)) {
      read_whole(t, gpt);
      continue;
    }
    zero_padding(t);
    const int64_t rows = stored_rows(*t.entry);
    const int64_t row_bytes = (t.entry->end - t.entry->begin) / std::max<int64_t>(rows, 1);
    int64_t per_part = std::max<int64_t>(1, kImportPartBytes / std::max<int64_t>(row_bytes, 1));
    // A transposed part's columns of the model's rows start on a cache line, which
    // util/transposed_copy then writes whole.
    if (stored_transposed(t, gpt) && per_part > kFloatsPerLine) {
      per_part -= per_part % kFloatsPerLine;
    }
    for (int64_t row = 0; row < rows; row += per_part) {
      parts.push_back({&t, row, std::min(per_part, rows - row)});
    }
  }
  run_tasks(static_cast<int64_t>(parts.size()), at::get_num_threads(), [&](int64_t i) {
    read_stored_rows(*parts[i].tensor, parts[i].row, parts[i].rows, gpt);
  });
}

std::string left_note(int64_t left) {
  return left > 0 ? fmt::format("; {} left as initialised (model.init_skip)", left) : "";
}

int64_t load_safetensors(const std::string& path, Model& model, bool gpt, const std::string& skip) {
  const Stopwatch clock;
  const std::unique_ptr<MatchedWeights> matched = match_weights(path, model, gpt, skip);
  read_all(*matched, gpt);
  const int64_t bytes = matched->bytes_read();
  const double seconds = clock.seconds();
  spdlog::info(
      "weights: {} tensors ({}) read from {} in {:.3g} s ({}/s){}{}", matched->tensors.size(),
      human_bytes(bytes), path, seconds,
      human_bytes(static_cast<int64_t>(static_cast<double>(bytes) / std::max(seconds, 1e-9))),
      matched->files.size() > 1 ? fmt::format(" ({} shards)", matched->files.size()) : "",
      left_note(matched->left));
  return bytes;
}

}  // namespace

std::optional<int64_t> load_initial_weights(const std::string& path, Model& model, bool gpt,
                                            const std::string& skip) {
  if (!std::filesystem::exists(path)) {
    throw DataError("model.init '" + path + "': no such file or directory", Raised::kAllRanks);
  }
  if (is_hdf5_file(path)) {
    if (!skip.empty()) {
      throw ConfigError("option 'model.init_skip' is for safetensors files; '" + path +
                        "' is a ddptrain checkpoint, whose model is loaded whole");
    }
    load_model_weights(path, model.named_parameters(), model.named_buffers());
    spdlog::info("weights: the model of checkpoint {}", path);
    return std::nullopt;
  }
  return load_safetensors(path, model, gpt, skip);
}

InitialWeightsSource::InitialWeightsSource(std::unique_ptr<MatchedWeights> weights, bool gpt)
    : weights_(std::move(weights)), gpt_(gpt) {}

InitialWeightsSource::~InitialWeightsSource() = default;

bool InitialWeightsSource::holds(const std::string& name) const {
  return weights_->index.count(name) != 0;
}

void InitialWeightsSource::log_read() const {
  spdlog::info("weights: slices of {} read in {:.3g} s ({} of {} on rank 0)", weights_->path,
               seconds_, human_bytes(bytes_read()), human_bytes(bytes_in_files()));
}

int64_t InitialWeightsSource::bytes_read() const {
  return weights_->bytes_read();
}

int64_t InitialWeightsSource::bytes_in_files() const {
  return weights_->bytes_in_files();
}

void InitialWeightsSource::read(const std::string& name, int64_t first, torch::Tensor out) {
  const Stopwatch clock;
  const MatchedTensor& t = weights_->tensors.at(weights_->index.at(name));
  if (SafetensorsFile::floating(*t.entry)) {
    read_elements(t, first, out.numel(), out.data_ptr<float>(), gpt_);
  } else {  // integer values in a float parameter: the whole tensor, converted
    torch::Tensor whole = torch::empty(t.target.sizes(), torch::kFloat);
    copy_into(whole, t.file->read(*t.entry), t.name, gpt_);
    out.copy_(whole.view(-1).narrow(0, first, out.numel()));
  }
  seconds_ += clock.seconds();
}

std::unique_ptr<InitialWeightsSource> open_initial_weights(const std::string& path, Model& model,
                                                           bool gpt, const std::string& skip) {
  if (!std::filesystem::exists(path)) {
    throw DataError("model.init '" + path + "': no such file or directory", Raised::kAllRanks);
  }
  if (is_hdf5_file(path)) {
    throw ConfigError(fmt::format(
        "option 'model.init' under ddp.zero = 3 reads safetensors, each rank its own slices; "
        "'{}' is a ddptrain checkpoint: write it as safetensors first (ddptrain export), or train "
        "with ddp.zero <= 2",
        path));
  }
  std::unique_ptr<MatchedWeights> matched = match_weights(path, model, gpt, skip);
  for (const NamedTensor& b : model.named_buffers()) {  // every rank holds them whole
    const auto at = matched->index.find(b.name);
    if (at != matched->index.end()) read_whole(matched->tensors[at->second], gpt);
  }
  spdlog::info(
      "weights: {} tensors of {} ({}) checked{}; ddp.zero = 3: each rank reads its own "
      "slices of the parameters as they are sharded{}",
      matched->tensors.size(), path, human_bytes(matched->bytes_in_files()),
      matched->files.size() > 1 ? fmt::format(" ({} shards)", matched->files.size()) : "",
      left_note(matched->left));
  return std::make_unique<InitialWeightsSource>(std::move(matched), gpt);
}

}  // namespace ddpt
