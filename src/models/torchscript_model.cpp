#include "models/torchscript_model.hpp"

#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/csrc/jit/api/function_impl.h>

#include "util/error.hpp"

namespace ddpt {
namespace {

// Each tensor once, under the first of its names, as torch.nn.Module.named_parameters() gives
// them. A script module lists a tensor under every attribute that holds it: weights tied by
// assignment (`self.lm_head.weight = self.wte.weight`, as nanoGPT and many Hugging Face models
// do) came twice, and training counted the tied weight twice and updated it twice per step.
template <class Items>
std::vector<NamedTensor> each_tensor_once(const Items& items) {
  std::vector<NamedTensor> out;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& item : items) {
    if (seen.insert(item.value.unsafeGetTensorImpl()).second) {
      out.push_back({item.name, item.value});
    }
  }
  return out;
}

// A module's exported cached step: make_cache(rows, capacity) once, decode(tokens, cache, start)
// per step. The cache's dimension 1 is the row, so rows move without knowing the rest of it.
class TorchScriptDecoder final : public TokenDecoder {
 public:
  TorchScriptDecoder(torch::jit::Module& module, const std::string& path, int64_t rows,
                     int64_t capacity)
      : module_(module), path_(path) {
    const c10::IValue cache = module_.run_method("make_cache", rows, capacity);
    if (!cache.isTensor() || cache.toTensor().dim() < 2 || cache.toTensor().size(1) < rows) {
      throw DataError(fmt::format("TorchScript model '{}': make_cache({}, {}) must return a tensor "
                                  "whose dimension 1 holds the rows",
                                  path_, rows, capacity),
                      Raised::kAllRanks);
    }
    cache_ = cache.toTensor();
  }
  torch::Tensor step(const torch::Tensor& tokens) override {
    const c10::IValue logits = module_.run_method("decode", tokens, cache_, length_);
    if (!logits.isTensor() || logits.toTensor().dim() != 2 ||
        logits.toTensor().size(0) != tokens.size(0)) {
      throw DataError(fmt::format("TorchScript model '{}': decode must return logits [rows, "
                                  "vocab] for tokens [rows, T]",
                                  path_),
                      Raised::kAllRanks);
    }
    length_ += tokens.size(1);
    return logits.toTensor();
  }
  void keep_rows(const std::vector<int64_t>& kept) override {
    // Ascending, so row kept[i] >= i: each copy reads a row no earlier copy has written.
    for (size_t i = 0; i < kept.size(); ++i) {
      if (kept[i] != static_cast<int64_t>(i)) {
        cache_.select(1, static_cast<int64_t>(i)).copy_(cache_.select(1, kept[i]));
      }
    }
  }

 private:
  torch::jit::Module& module_;
  std::string path_;
  torch::Tensor cache_;
  int64_t length_ = 0;  // positions cached
};

}  // namespace

Model::Decoding TorchScriptModel::decoding() const {
  return module_.find_method("make_cache") && module_.find_method("decode")
             ? Decoding::kCache
             : Decoding::kWholeWindow;
}

std::unique_ptr<TokenDecoder> TorchScriptModel::decoder(const std::vector<int64_t>& padding,
                                                        int64_t capacity) {
  if (decoding() == Decoding::kWholeWindow) return nullptr;
  if (std::any_of(padding.begin(), padding.end(), [](int64_t slots) { return slots != 0; })) {
    throw Error("TorchScript model '" + path_ + "': its cached step takes no padded prompts",
                ExitCode::kInternal, Raised::kThisRank);
  }
  return std::make_unique<TorchScriptDecoder>(module_, path_, static_cast<int64_t>(padding.size()),
                                              capacity);
}

TorchScriptModel::TorchScriptModel(const std::string& path) : path_(path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw DataError("model.path '" + path + "': no such file", Raised::kAllRanks);
  }
  try {
    module_ = torch::jit::load(path);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw DataError("model.path '" + path + "' is not a TorchScript model (" +
                        what.substr(0, what.find('\n')) + ")",
                    Raised::kAllRanks);
  }
  units_ = find_units(module_, runner_.get());
}

torch::Tensor TorchScriptModel::forward(const torch::Tensor& inputs) {
  c10::IValue output;
  if (*runner_ != nullptr && units_.forward) {
    torch::jit::Stack stack{module_._ivalue(), inputs};
    units_.forward->run(stack);
    output = stack.back();
  } else {
    output = module_.forward({inputs});
  }
  if (!output.isTensor()) {
    throw DataError(
        "TorchScript model '" + path_ + "': forward must return a tensor, got " + output.tagKind(),
        Raised::kAllRanks);
  }
  return output.toTensor();
}

std::vector<std::string> TorchScriptModel::unit_prefixes() const {
  std::vector<std::string> prefixes;
  for (const std::string& path : units_.paths) prefixes.push_back(path + ".");
  return prefixes;
}

std::vector<std::string> TorchScriptModel::conditional_parameters() const {
  // By tensor: a weight tied across modules is one parameter, under its first name.
  std::unordered_set<const c10::TensorImpl*> used;
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    for (const std::string& path : units_.conditional) {
      if (p.name == path || p.name.rfind(path + ".", 0) == 0) {
        used.insert(p.value.unsafeGetTensorImpl());
      }
    }
  }
  std::vector<std::string> names;
  for (const NamedTensor& p : each_tensor_once(module_.named_parameters(/*recurse=*/true))) {
    if (used.count(p.tensor.unsafeGetTensorImpl()) > 0) names.push_back(p.name);
  }
  return names;
}

std::vector<NamedTensor> TorchScriptModel::named_parameters() {
  return each_tensor_once(module_.named_parameters(/*recurse=*/true));
}

std::vector<NamedTensor> TorchScriptModel::named_buffers() {
  return each_tensor_once(module_.named_buffers(/*recurse=*/true));
}

}  // namespace ddpt
