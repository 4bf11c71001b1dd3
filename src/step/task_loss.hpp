// The loss a task trains with and the sums evaluation reduces across ranks: cross-entropy for
// classification and next-token prediction (at every position), mean squared error per target
// value for regression.
#pragma once

#include <torch/torch.h>

#include "data/dataset.hpp"

namespace ddpt {

// Mean loss of a batch. ConfigError (exit 2) if the model's output shape does not fit the task:
// a model that disagrees with its data is a deck problem.
torch::Tensor task_loss(const DatasetInfo& info, const torch::Tensor& outputs,
                        const torch::Tensor& targets);

// [loss summed over the batch's units, correct predictions, units] as float64, where a unit is a
// sample (classification), a target value (regression) or a token (next-token). Summed over
// batches and ranks, loss = [0] / [2] and accuracy = [1] / [2] (not meaningful for regression).
torch::Tensor task_sums(const DatasetInfo& info, const torch::Tensor& outputs,
                        const torch::Tensor& targets);

}  // namespace ddpt
