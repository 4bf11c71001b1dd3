#include "setup/initial_weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

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

// The entry read straight into the model's tensor where the file stores it as the model keeps it
// (float32 of the same shape; a GPT's vocabulary rows, padded with zero rows): most of a model,
// with no copy. False, reading nothing, where it needs converting (GPT-2's Conv1D weights, other
// dtypes) or another shape (copy_into says which).
bool read_in_place(const SafetensorsFile& file, const SafetensorsEntry& entry,
                   torch::Tensor& target, const std::string& name, bool gpt) {
  if (gpt && gpt2_conv1d_weight(name)) return false;
  const bool vocab_rows = gpt && (name == "wte.weight" || name == "lm_head.weight");
  if (vocab_rows && entry.shape.size() == 2 && target.dim() == 2 &&
      entry.shape[1] == target.size(1) && entry.shape[0] < target.size(0)) {
    torch::Tensor rows = target.narrow(0, 0, entry.shape[0]);
    if (!file.read_into(entry, rows)) return false;
    target.narrow(0, entry.shape[0], target.size(0) - entry.shape[0]).zero_();
    return true;
  }
  return file.read_into(entry, target);
}

// `value` (the file's, GPT-2's orientation undone) into `target`; a GPT's embedding or head of
// fewer rows than the model's is padded with zeros.
void copy_into(torch::Tensor& target, torch::Tensor value, const std::string& name,
               const std::string& where, bool gpt) {
  if (gpt && gpt2_conv1d_weight(name) && value.dim() == 2) value = value.t();
  const bool vocab_rows = gpt && (name == "wte.weight" || name == "lm_head.weight");
  const bool padded = vocab_rows && value.dim() == 2 && target.dim() == 2 &&
                      value.size(1) == target.size(1) && value.size(0) < target.size(0);
  if (value.sizes() != target.sizes() && !padded) {
    throw DataError(
        fmt::format("{}: tensor '{}' is [{}] there and [{}] in the deck's model: set the model "
                    "options (model.n_layer, n_head, n_embd, vocab, block) to the file's sizes",
                    where, name, fmt::join(value.sizes(), ", "), fmt::join(target.sizes(), ", ")),
        Raised::kAllRanks);
  }
  torch::NoGradGuard no_grad;
  if (padded) {
    target.zero_();
    target.narrow(0, 0, value.size(0)).copy_(value);
  } else {
    target.copy_(value);
  }
}

// What one load has found so far, over every file of the model.
struct LoadedTensors {
  explicit LoadedTensors(const std::string& skip) : skip(skip) {}
  GlobList skip;                               // model.init_skip: names neither read nor required
  std::vector<std::string> unknown;            // the file's names the model lacks
  std::map<std::string, std::string> file_of;  // the file's name -> the file it came from
  std::set<std::string> loaded;                // the model's names
  int64_t bytes_read = 0;
};

// The tensors of one safetensors file into the model's `wanted`; a name a shard before held too
// is DataError.
void load_file(const std::string& path, std::map<std::string, torch::Tensor>& wanted, bool gpt,
               LoadedTensors& found) {
  const SafetensorsFile file(path);
  const bool tied = gpt && wanted.count("lm_head.weight") == 0;
  for (const SafetensorsEntry& entry : file.header().entries) {
    const auto [earlier, first] = found.file_of.emplace(entry.name, path);
    if (!first) {
      throw DataError(
          fmt::format("tensor '{}' is in both {} and {}", entry.name, earlier->second, path),
          Raised::kAllRanks);
    }
    const std::string name = model_name(entry.name, gpt);
    if (name.empty() || (tied && name == "lm_head.weight") || found.skip.matches(name)) continue;
    const auto target = wanted.find(name);
    if (target == wanted.end()) {
      found.unknown.push_back(entry.name);
      continue;
    }
    torch::NoGradGuard no_grad;
    if (!read_in_place(file, entry, target->second, name, gpt)) {
      copy_into(target->second, file.read(entry), name, file.path(), gpt);
    }
    found.loaded.insert(name);
  }
  found.bytes_read += file.bytes_read();
}

// Every tensor the index names is in the file it names.
void check_weight_map(const SafetensorsModelFiles& files, const LoadedTensors& found,
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

int64_t load_safetensors(const std::string& path, Model& model, bool gpt, const std::string& skip) {
  const Stopwatch clock;
  const SafetensorsModelFiles files = safetensors_model_files(path);
  std::map<std::string, torch::Tensor> wanted;
  for (const NamedTensor& p : model.named_parameters()) wanted.emplace(p.name, p.tensor);
  for (const NamedTensor& b : model.named_buffers()) wanted.emplace(b.name, b.tensor);
  LoadedTensors found(skip);
  for (const std::string& file : files.files) load_file(file, wanted, gpt, found);
  check_weight_map(files, found, path);
  std::vector<std::string> missing;
  int64_t left = 0;  // as initialised, by model.init_skip
  for (const auto& [name, tensor] : wanted) {
    if (found.loaded.count(name) != 0) continue;
    if (found.skip.matches(name)) {
      ++left;
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
  const double seconds = clock.seconds();
  spdlog::info("weights: {} tensors ({}) read from {} in {:.3g} s ({}/s){}{}", found.loaded.size(),
               human_bytes(found.bytes_read), path, seconds,
               human_bytes(static_cast<int64_t>(static_cast<double>(found.bytes_read) /
                                                std::max(seconds, 1e-9))),
               files.files.size() > 1 ? fmt::format(" ({} shards)", files.files.size()) : "",
               left > 0 ? fmt::format("; {} left as initialised (model.init_skip)", left) : "");
  return found.bytes_read;
}

}  // namespace

bool is_hdf5_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char signature[8] = {};
  return in.read(signature, 8) && std::memcmp(signature, "\x89HDF\r\n\x1a\n", 8) == 0;
}

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

}  // namespace ddpt
