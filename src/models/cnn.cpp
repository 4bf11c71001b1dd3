#include "models/cnn.hpp"

#include <fmt/format.h>

#include "models/activation_checkpoint.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// FLOPs of a k x k convolution producing [out, h, w].
double conv_flops(int64_t in, int64_t out, int64_t kernel, int64_t h, int64_t w) {
  return 2.0 * static_cast<double>(in * out * kernel * kernel * h * w);
}

class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", conv(in, out, 3, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", conv(out, out, 3, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      downsample_ = register_module("downsample",
                                    nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    return torch::relu(y + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

class ResNetImpl : public nn::Module {
 public:
  // `units`: what each unit's building leaves (models/deferred_values.hpp); `stem_state`: its
  // before() for the stem, taken before this object (whose first members are the stem) is built.
  ResNetImpl(int64_t channels, const std::vector<int64_t>& widths, int64_t blocks, int64_t classes,
             bool checkpoint_blocks, const UnitValues& units, torch::Tensor stem_state)
      : conv1_(register_module("conv1", conv(channels, widths.front(), 3, 1))),
        bn1_(register_module("bn1", nn::BatchNorm2d(widths.front()))),
        checkpoint_blocks_(checkpoint_blocks) {
    units.built(*conv1_, std::move(stem_state));
    units.built(*bn1_, units.before());  // draws nothing
    int64_t in = widths.front();
    for (size_t s = 0; s < widths.size(); ++s) {
      nn::Sequential stage;
      for (int64_t b = 0; b < blocks; ++b) {
        torch::Tensor state = units.before();
        stage->push_back(BasicBlock(in, widths[s], b == 0 && s > 0 ? 2 : 1));
        units.built(*stage->ptr(stage->size() - 1), std::move(state));
        in = widths[s];
      }
      stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
    }
    torch::Tensor state = units.before();
    fc_ = register_module("fc", nn::Linear(in, classes));
    units.built(*fc_, std::move(state));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    size_t unit = 0;
    for (auto& stage : stages_) {
      for (auto& module : *stage) {
        auto block = std::dynamic_pointer_cast<BasicBlockImpl>(module.ptr());
        auto run = [block](const torch::Tensor& in) { return block->forward(in); };
        auto kept = [this, block, run](const torch::Tensor& in) {
          return checkpoint_blocks_ ? checkpointed(run, in, block->buffers()) : run(in);
        };
        y = run_unit(runner_, unit++, kept, y);
      }
    }
    return fc_(y.mean({2, 3}));  // global average pooling
  }
  // The residual blocks, stage by stage: "layer1.0.", "layer1.1.", "layer2.0.", ...
  std::vector<std::string> block_prefixes() const {
    std::vector<std::string> prefixes;
    for (size_t s = 0; s < stages_.size(); ++s) {
      for (size_t b = 0; b < stages_[s]->size(); ++b) {
        prefixes.push_back("layer" + std::to_string(s + 1) + "." + std::to_string(b) + ".");
      }
    }
    return prefixes;
  }
  void run_blocks_through(UnitRunner* runner) { runner_ = runner; }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  std::vector<nn::Sequential> stages_;
  nn::Linear fc_{nullptr};
  bool checkpoint_blocks_;        // each residual block's activations recomputed in backward
  UnitRunner* runner_ = nullptr;  // ZeRO-3: gathers each block's parameters
};
TORCH_MODULE(ResNet);

}  // namespace

Cnn::Cnn(const std::vector<int64_t>& image, const std::vector<int64_t>& widths, int64_t blocks,
         int64_t classes, bool checkpoint_blocks, ParameterValues values) {
  if (image.size() != 3) {
    throw ConfigError(fmt::format(
        "option 'model.type' = cnn needs images [channels, height, width]; the data's samples "
        "are [{}]",
        fmt::join(image, ", ")));
  }
  const int64_t halvings = static_cast<int64_t>(widths.size()) - 1;
  if ((image[1] >> halvings) < 1 || (image[2] >> halvings) < 1) {
    throw ConfigError(fmt::format(
        "option 'model.channels' = {} stages halve {}x{} images {} times: too many stages",
        fmt::join(widths, ","), image[1], image[2], halvings));
  }
  const UnitValues units(values, deferred_);
  net_ = ResNet(image[0], widths, blocks, classes, checkpoint_blocks, units, units.before()).ptr();
  // FLOPs by layer, following the shapes (ceil division: 3x3 convolutions with padding 1).
  int64_t h = image[1];
  int64_t w = image[2];
  flops_ = conv_flops(image[0], widths.front(), 3, h, w);
  int64_t in = widths.front();
  for (size_t s = 0; s < widths.size(); ++s) {
    for (int64_t b = 0; b < blocks; ++b) {
      const bool down = b == 0 && s > 0;
      if (down) {
        h = (h + 1) / 2;
        w = (w + 1) / 2;
      }
      flops_ += conv_flops(in, widths[s], 3, h, w) + conv_flops(widths[s], widths[s], 3, h, w);
      if (down || in != widths[s]) flops_ += conv_flops(in, widths[s], 1, h, w);
      in = widths[s];
    }
  }
  flops_ += 2.0 * static_cast<double>(in * classes);
  description_ = fmt::format("ResNet CNN [{}] -> stages [{}] x {} blocks -> {}",
                             fmt::join(image, ", "), fmt::join(widths, ", "), blocks, classes);
}

torch::Tensor Cnn::forward(const torch::Tensor& inputs) {
  return static_cast<ResNetImpl&>(*net_).forward(inputs);
}

std::vector<std::string> Cnn::unit_prefixes() const {
  return static_cast<const ResNetImpl&>(*net_).block_prefixes();
}

void Cnn::run_blocks_through(UnitRunner* runner) {
  static_cast<ResNetImpl&>(*net_).run_blocks_through(runner);
}

double Cnn::parameter_count(const std::vector<int64_t>& image, const std::vector<int64_t>& widths,
                            int64_t blocks, int64_t classes) {
  if (image.empty() || widths.empty()) return 0;  // the constructor refuses these
  auto conv = [](double in, double out, double kernel) { return in * out * kernel * kernel; };
  const double batch_norm = 2;  // weight and bias per channel (running statistics are buffers)
  double in = static_cast<double>(widths.front());
  double count = conv(static_cast<double>(image.front()), in, 3) + batch_norm * in;
  for (size_t s = 0; s < widths.size(); ++s) {
    const double out = static_cast<double>(widths[s]);
    for (int64_t b = 0; b < blocks; ++b) {
      count += conv(in, out, 3) + conv(out, out, 3) + 2 * batch_norm * out;
      if ((b == 0 && s > 0) || in != out) count += conv(in, out, 1) + batch_norm * out;
      in = out;
    }
  }
  return count + (in + 1) * static_cast<double>(classes);
}

}  // namespace ddpt
