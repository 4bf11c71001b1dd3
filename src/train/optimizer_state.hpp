// The optimizer's per-parameter state (SGD momentum buffers; AdamW step counts and moments) as
// named tensors, for checkpoints: "<parameter>/<field>".
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "util/named_tensor.hpp"

namespace ddpt {

// State of every parameter that has some (none before the first step).
std::vector<NamedTensor> export_optimizer_state(torch::optim::Optimizer& optimizer,
                                                const std::vector<NamedTensor>& params);

// Rebuilds the state from `read(name)`, which returns an undefined tensor for a missing name.
// Fields are copied, so the state owns its memory.
void import_optimizer_state(torch::optim::Optimizer& optimizer,
                            const std::vector<NamedTensor>& params,
                            const std::function<torch::Tensor(const std::string&)>& read);

}  // namespace ddpt
