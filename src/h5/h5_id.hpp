// RAII owner of any HDF5 identifier (file, group, dataset, dataspace, datatype, attribute,
// property list): released with H5Idec_ref, which closes the object when no one else holds it.
#pragma once

#include <hdf5.h>

#include <utility>

#include "h5/h5_lock.hpp"

namespace ddpt {

class H5Id {
 public:
  H5Id() = default;
  explicit H5Id(hid_t id) : id_(id) {}
  ~H5Id() { reset(); }
  H5Id(H5Id&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  H5Id& operator=(H5Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Forgets the identifier without closing it: for a parallel file whose collective close would
  // wait forever for ranks that are elsewhere (a write failed on this rank; the job aborts).
  hid_t abandon() noexcept { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  void reset() noexcept {
    if (id_ < 0) return;
    expect_hdf5_lock("H5Idec_ref");
    const Hdf5Lock lock;
    H5Idec_ref(id_);  // destructors never throw; a failed close is not actionable
    id_ = H5I_INVALID_HID;
  }
  hid_t id_ = H5I_INVALID_HID;
};

}  // namespace ddpt
