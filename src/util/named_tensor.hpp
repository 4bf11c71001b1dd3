// A tensor with its state-dict name ("layers.0.weight").
#pragma once

#include <torch/torch.h>

#include <string>

namespace ddpt {

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

}  // namespace ddpt
