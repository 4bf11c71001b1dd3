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

// Bytes of optimizer state a rank holds for `trainable_values` float32 values once every parameter
// has taken a step: AdamW's two moments (8 bytes a value), SGD's momentum buffer (4; none without
// momentum). Every rank holds all of it (the state is replicated).
int64_t planned_optimizer_state_bytes(const OptimConfig& config, int64_t trainable_values);

// Sets every parameter group's learning rate.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace ddpt
