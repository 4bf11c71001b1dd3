#include "models/torchscript_model.hpp"

#include <filesystem>
#include <unordered_set>

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

}  // namespace

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
