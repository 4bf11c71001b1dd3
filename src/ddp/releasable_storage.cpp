#include "ddp/releasable_storage.hpp"

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

bool storage_held(const torch::Tensor& flat) {
  return flat.storage().unsafeGetStorageImpl()->data_ptr().get() != nullptr;
}

}  // namespace ddpt
