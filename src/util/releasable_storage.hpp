// Memory that exists only while it is used: ZeRO-3's gathered parameters. A tensor's storage is
// emptied (its memory handed back to the allocator) and filled again later, while every tensor
// that refers to that storage keeps referring to it: the parameters, and what autograd saved of
// them for backward. Each reads the storage's memory when it is used, so it sees what was
// gathered last. (PyTorch FSDP does the same with storage().resize_(0).) The tensors' version
// counters are not touched: the values autograd saved come back the same, gathered again.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace ddpt {

// Hands `flat`'s memory back to its allocator; `flat` (and every tensor on its storage) must not
// be read until restore_storage().
void release_storage(const torch::Tensor& flat);
// New memory for `flat`'s storage, enough for `flat` (contiguous, offset 0); its values are
// undefined until written.
void restore_storage(const torch::Tensor& flat);
// Whether `flat`'s storage holds memory now.
bool storage_held(const torch::Tensor& flat);
// A contiguous tensor of `numel` elements as release_storage() leaves one: no memory until it is
// restored (so that its first memory can be a kept block too).
torch::Tensor released_tensor(int64_t numel, const torch::TensorOptions& options);

// release_storage and restore_storage that keep host memory for the next restore instead of
// freeing it: ZeRO-3 gathers and releases every unit at every step, and malloc, as ddptrain sets
// it (runtime/process_tuning.cpp), does not reuse a freed block for the next request of its size
// (LibTorch's aligned allocations ask a little more), so the heap grew by about a unit per gather
// until it held the whole model: a peak well above the one with glibc's defaults (benchmarks.md,
// "Choices measured": ZeRO-3's kept blocks). Kept blocks are used again whole, the smallest that
// is large enough, so the pool holds no more blocks than were ever in use at once. Device memory
// is freed as release_storage does: the CUDA caching allocator reuses it itself, and knows which
// stream still reads a block.
class StoragePool {
 public:
  void release(const torch::Tensor& flat);
  void restore(const torch::Tensor& flat);

 private:
  std::vector<c10::DataPtr> kept_;  // host blocks, each the whole of its allocation
  std::vector<size_t> bytes_;       // their sizes
};

}  // namespace ddpt
