// Memory that exists only while it is used: ZeRO-3's gathered parameters. A tensor's storage is
// emptied (its memory handed back to the allocator) and filled again later, while every tensor
// that refers to that storage keeps referring to it: the parameters, and what autograd saved of
// them for backward. Each reads the storage's memory when it is used, so it sees what was
// gathered last. (PyTorch FSDP does the same with storage().resize_(0).) The tensors' version
// counters are not touched: the values autograd saved come back the same, gathered again.
#pragma once

#include <torch/torch.h>

namespace ddpt {

// Hands `flat`'s memory back to its allocator; `flat` (and every tensor on its storage) must not
// be read until restore_storage().
void release_storage(const torch::Tensor& flat);
// New memory for `flat`'s storage, enough for `flat` (contiguous, offset 0); its values are
// undefined until written.
void restore_storage(const torch::Tensor& flat);
// Whether `flat`'s storage holds memory now.
bool storage_held(const torch::Tensor& flat);

}  // namespace ddpt
