#include "util/releasable_storage.hpp"

#include "util/error.hpp"

namespace ddpt {

void release_storage(const torch::Tensor& flat) {
  c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
  // The old memory goes back to the allocator when the returned pointer dies, here.
  storage->set_data_ptr(at::DataPtr(nullptr, flat.device()));
  storage->set_nbytes(0);
}

void restore_storage(const torch::Tensor& flat) {
  if (flat.storage_offset() != 0 || !flat.is_contiguous()) {
    throw Error("restore_storage: needs a contiguous tensor at the start of its storage",
                ExitCode::kInternal, Raised::kAllRanks);
  }
  c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(flat.numel()) * flat.element_size();
  if (storage->nbytes() >= bytes && storage->data_ptr().get() != nullptr) return;
  storage->set_data_ptr(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
}

void StoragePool::release(const torch::Tensor& flat) {
  if (!flat.device().is_cpu()) {
    release_storage(flat);
    return;
  }
  c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
  const size_t bytes = storage->nbytes();
  c10::DataPtr block = storage->set_data_ptr(at::DataPtr(nullptr, flat.device()));
  storage->set_nbytes(0);
  if (block.get() == nullptr) return;
  kept_.push_back(std::move(block));
  bytes_.push_back(bytes);
}

void StoragePool::restore(const torch::Tensor& flat) {
  const size_t needed = static_cast<size_t>(flat.numel()) * flat.element_size();
  if (!flat.device().is_cpu() || storage_held(flat)) {
    restore_storage(flat);
    return;
  }
  size_t best = kept_.size();
  for (size_t i = 0; i < kept_.size(); ++i) {
    if (bytes_[i] >= needed && (best == kept_.size() || bytes_[i] < bytes_[best])) best = i;
  }
  if (best == kept_.size()) {
    restore_storage(flat);
    return;
  }
  if (flat.storage_offset() != 0 || !flat.is_contiguous()) {
    throw Error("StoragePool::restore: needs a contiguous tensor at the start of its storage",
                ExitCode::kInternal, Raised::kAllRanks);
  }
  c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
  storage->set_data_ptr(std::move(kept_[best]));
  storage->set_nbytes(bytes_[best]);  // the whole block: it goes back whole
  kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
  bytes_.erase(bytes_.begin() + static_cast<std::ptrdiff_t>(best));
}

bool storage_held(const torch::Tensor& flat) {
  return flat.storage().unsafeGetStorageImpl()->data_ptr().get() != nullptr;
}

torch::Tensor released_tensor(int64_t numel, const torch::TensorOptions& options) {
  torch::Tensor flat = torch::empty({0}, options);  // a storage without memory
  flat.unsafeGetTensorImpl()->set_sizes_contiguous({numel});
  return flat;
}

}  // namespace ddpt
