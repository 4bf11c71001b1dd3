// model.activation_checkpointing: a block's forward run without keeping its activations, and run
// again in backward to differentiate it (PyTorch's reentrant torch.utils.checkpoint). Only the
// block's input is kept; during backward one block's activations exist at a time. The second run
// is the same arithmetic on the same input, with the random generators (dropout) and autocast
// set as they were in the forward, so the gradients are the same bit for bit. The block's buffers
// (batch-norm statistics) are put back after the second run, so they move once per step.
// The gradients of the block's parameters reach them through a backward inside the backward, as
// without checkpointing: the reducer's hooks on the parameters fire as usual.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace ddpt {

using BlockForward = std::function<torch::Tensor(const torch::Tensor&)>;

// `block(input)`, checkpointed where autograd records (grad mode on and `input` or a parameter
// requiring gradients: `input` must then require them, as every block input after a model's
// first layer does); plainly elsewhere (evaluation, no_grad). `buffers`: the block's buffers.
torch::Tensor checkpointed(const BlockForward& block, const torch::Tensor& input,
                           const std::vector<torch::Tensor>& buffers = {});

}  // namespace ddpt
