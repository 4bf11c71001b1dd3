// A small ResNet for images [N, C, H, W], named as torchvision's ResNet (conv1, bn1,
// layer1.0.conv1,
// ..., fc): a 3x3 stem, then one stage per width in model.channels, each of model.blocks basic
// residual blocks (two 3x3 convolutions with batch norm; a 1x1 projection on the shortcut where the
// shape changes); every stage after the first halves H and W. Global average pooling, then a
// linear classifier.
//
// Batch-norm running statistics are buffers: the data-parallel engine gives every rank rank 0's
// buffers before each step (as PyTorch DDP's broadcast_buffers), so evaluation and checkpoints see
// one set.
#pragma once

#include <vector>

#include "models/module_model.hpp"

namespace ddpt {

class Cnn final : public ModuleModel {
 public:
  // `image`: [channels, height, width] of one sample. `checkpoint_blocks`: each residual block's
  // activations recomputed in backward (models/activation_checkpoint.hpp).
  Cnn(const std::vector<int64_t>& image, const std::vector<int64_t>& widths, int64_t blocks,
      int64_t classes, bool checkpoint_blocks = false,
      ParameterValues values = ParameterValues::kInitialised);
  // The parameters of that CNN, without building it (a double: an absurd deck overflows int64).
  static double parameter_count(const std::vector<int64_t>& image,
                                const std::vector<int64_t>& widths, int64_t blocks,
                                int64_t classes);
  torch::Tensor forward(const torch::Tensor& inputs) override;
  std::vector<std::string> unit_prefixes() const override;  // the residual blocks
  void run_blocks_through(UnitRunner* runner) override;

 private:
  torch::nn::Module& root() override { return *net_; }
  std::shared_ptr<torch::nn::Module> net_;
};

}  // namespace ddpt
