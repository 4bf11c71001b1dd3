// Builds the optimizer a deck asks for, with two parameter groups: weights that are decayed, and
// biases and norm weights (1-D parameters) that are not (the GPT-2 / nanoGPT convention).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "config/config.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const std::vector<NamedTensor>& params);

// Sets every parameter group's learning rate.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace ddpt
