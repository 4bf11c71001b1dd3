// A model written in Python, scripted with torch.jit.script(...).save(path), trained here with no
// Python on the cluster. Its forward takes the input batch and returns logits.
#pragma once

#include <torch/script.h>

#include "models/model.hpp"

namespace ddpt {

class TorchScriptModel final : public Model {
 public:
  // Throws DataError (exit 3) naming the file when it is missing or not a TorchScript archive.
  explicit TorchScriptModel(const std::string& path);
  torch::Tensor forward(const torch::Tensor& inputs) override;
  std::vector<NamedTensor> named_parameters() override;
  std::vector<NamedTensor> named_buffers() override;
  void train(bool on) override { module_.train(on); }
  void to(torch::Device device) override { module_.to(device); }
  std::string describe() const override { return "TorchScript " + path_; }

 private:
  std::string path_;
  torch::jit::Module module_;
};

}  // namespace ddpt
