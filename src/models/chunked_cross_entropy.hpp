// The next-token loss without the full logits: the mean cross-entropy of `hidden` [N, C] through
// a linear head `weight` [V, C] (logits = hidden weight^T) against `targets` [N], made `rows` rows
// at a time. Each block's logits are made, used for the loss and for the gradients of `hidden`
// and `weight` (which forward computes, while the block exists), and freed, so the N x V logits
// never exist at once: for GPT-2 at 16 x 1024 tokens they are 3.3 GB in fp32, and their
// log-softmax as much again. It holds gradients the size of `hidden` and `weight` until backward.
//
// Equal to cross_entropy(hidden.matmul(weight.t()), targets) but for the order of the sums.
// Under autocast the blocks' products run in the autocast type, as the plain head's would, and
// the softmax in fp32. Gradients reach `hidden` and `weight`
// (a tied embedding gets the head's share added by autograd).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace ddpt {

torch::Tensor chunked_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& targets, int64_t rows);

}  // namespace ddpt
