#include "models/torchscript_model.hpp"

#include <filesystem>

#include "util/error.hpp"

namespace ddpt {

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
}

torch::Tensor TorchScriptModel::forward(const torch::Tensor& inputs) {
  const c10::IValue output = module_.forward({inputs});
  if (!output.isTensor()) {
    throw DataError(
        "TorchScript model '" + path_ + "': forward must return a tensor, got " + output.tagKind(),
        Raised::kAllRanks);
  }
  return output.toTensor();
}

std::vector<NamedTensor> TorchScriptModel::named_parameters() {
  std::vector<NamedTensor> out;
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    out.push_back({item.name, item.value});
  }
  return out;
}

std::vector<NamedTensor> TorchScriptModel::named_buffers() {
  std::vector<NamedTensor> out;
  for (const auto& item : module_.named_buffers(/*recurse=*/true))
    out.push_back({item.name, item.value});
  return out;
}

}  // namespace ddpt
