#include "setup/initial_weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

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

// The entry read straight into the model's tensor where the file stores it as the model keeps it
// (float32 of the same shape; a GPT's vocabulary rows, padded with zero rows): most of a model,
// with no copy. False, reading nothing, where it needs converting (GPT-2's Conv1D weights, other
// dtypes).
bool read_in_place(const SafetensorsFile& file, const SafetensorsEntry& entry,
                   torch::Tensor& target, const std::string& name, bool gpt) {
  if (gpt && gpt2_conv1d_weight(name)) return false;
  if (padded_rows(entry, target, name, gpt)) {
    torch::Tensor rows = target.narrow(0, 0, entry.shape[0]);
    if (!file.read_into(entry, rows)) return false;
    target.narrow(0, entry.shape[0], target.size(0) - entry.shape[0]).zero_();
    return true;
  }
  return file.read_into(entry, target);
}

// `value` (the file's, of a shape check_shape took, GPT-2's orientation undone) into `target`; a
// GPT's embedding or head of fewer rows than the model's is padded with zeros.
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

void read_whole(const MatchedTensor& t, bool gpt) {
  torch::NoGradGuard no_grad;
  torch::Tensor target = t.target;
  if (!read_in_place(*t.file, *t.entry, target, t.name, gpt)) {
    copy_into(target, t.file->read(*t.entry), t.name, gpt);
  }
}

std::string left_note(int64_t left) {
  return left > 0 ? fmt::format("; {} left as initialised (model.init_skip)", left) : "";
}

int64_t load_safetensors(const std::string& path, Model& model, bool gpt, const std::string& skip) {
  const Stopwatch clock;
  const std::unique_ptr<MatchedWeights> matched = match_weights(path, model, gpt, skip);
  for (const MatchedTensor& t : matched->tensors) read_whole(t, gpt);
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

const std::string& InitialWeightsSource::path() const {
  return weights_->path;
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
  const SafetensorsEntry& entry = *t.entry;
  const int64_t count = out.numel();
  if (gpt_ && gpt2_conv1d_weight(name) && entry.shape.size() == 2) {
    // Stored [in, out], kept [out, in]: the piece's elements lie in the model's rows r0..r1,
    // which are columns r0..r1 of every file row. One run per file row over that band (not a
    // bounding range, which would be most of the tensor), transposed back into the piece.
    const int64_t rows = entry.shape[1];
    const int64_t cols = entry.shape[0];
    const int64_t r0 = first / cols;
    const int64_t r1 = (first + count - 1) / cols;
    const torch::Tensor band = t.file->read_runs(entry, r0, r1 - r0 + 1, rows, cols);
    if (first % cols == 0 && count % cols == 0) {
      out.view({r1 - r0 + 1, cols}).copy_(band.t());  // whole rows: one strided copy
    } else {
      out.copy_(band.t().reshape(-1).narrow(0, first - r0 * cols, count));
    }
  } else {
    // As the model keeps it, row-major, read straight into `out` where the file holds float32; a
    // padded vocabulary's missing rows are the tail: zeros.
    const int64_t stored = c10::multiply_integers(entry.shape);
    const int64_t in_file = std::clamp<int64_t>(stored - first, 0, count);
    if (in_file > 0) {
      const torch::Tensor head = out.narrow(0, 0, in_file);
      const torch::Tensor values =
          t.file->read_runs(entry, first, in_file, in_file, 1, head.view({1, in_file}));
      if (values.data_ptr() != head.data_ptr()) head.copy_(values.view(-1));
    }
    if (in_file < count) out.narrow(0, in_file, count - in_file).zero_();
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
