// Builds the optimizer a deck asks for, with two parameter groups: weights that are decayed, and
// biases and norm weights (1-D parameters) that are not (the GPT-2 / nanoGPT convention).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "config/choices.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

// The optimizer's hyperparameters ([optim] without the schedule and clipping, which are the
// trainer's).
struct OptimizerSpec {
  OptimizerType type = OptimizerType::kAdamW;
  double lr = 1e-3;
  double momentum = 0.9;  // sgd
  bool nesterov = false;  // sgd
  double weight_decay = 0.0;
  double beta1 = 0.9;  // adamw
  double beta2 = 0.999;
  double eps = 1e-8;
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& config,
                                                        const std::vector<NamedTensor>& params);
// The same over tensors that stand for parts of parameters (ZeRO-1's pieces, which are 1-D):
// `decayed[i]` says whether tensors[i] belongs to a decayed parameter.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& config,
                                                        const std::vector<torch::Tensor>& tensors,
                                                        const std::vector<bool>& decayed);
// Whether weight decay applies to `param`: matrices, embeddings and kernels (2-D and more) yes,
// biases and norm weights (1-D) no.
bool is_decayed(const torch::Tensor& param);

// Bytes of optimizer state a rank holds for `trainable_values` float32 values once every parameter
// has taken a step: AdamW's two moments (8 bytes a value), SGD's momentum buffer (4; none without
// momentum). Without ZeRO every rank holds the state of every trainable value; with ZeRO-1 of the
// values it updates.
int64_t planned_optimizer_state_bytes(const OptimizerSpec& config, int64_t trainable_values);

// Sets every parameter group's learning rate.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace ddpt
