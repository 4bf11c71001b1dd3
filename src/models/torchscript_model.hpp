// A model written in Python, scripted with torch.jit.script(...).save(path), trained here with no
// Python on the cluster. Its forward takes the input batch and returns logits.
#pragma once

#include <torch/script.h>

#include <memory>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "models/torchscript_units.hpp"

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
  // ZeRO-3's units: the submodules models/torchscript_units.hpp finds.
  std::vector<std::string> unit_prefixes() const override;
  // Those of the submodules and attributes forward uses inside an `if` or a loop.
  std::vector<std::string> conditional_parameters() const override;
  void run_blocks_through(UnitRunner* runner) override { *runner_ = runner; }
  // kCache where the module exports make_cache(rows, capacity) and decode(tokens, cache, start)
  // (design.md, "A TorchScript model's cached step"), which know no padding.
  Decoding decoding() const override;
  std::unique_ptr<TokenDecoder> decoder(const std::vector<int64_t>& padding,
                                        int64_t capacity) override;

 private:
  std::string path_;
  torch::jit::Module module_;
  // Where the graph of units_.forward finds the runner: its address is a constant there.
  std::unique_ptr<UnitRunner*> runner_ = std::make_unique<UnitRunner*>(nullptr);
  TorchScriptUnits units_;
};

}  // namespace ddpt
