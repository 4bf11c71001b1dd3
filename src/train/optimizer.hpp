// Builds the optimizer a deck asks for.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "config/config.hpp"

namespace ddpt {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        std::vector<torch::Tensor> params);

}  // namespace ddpt
