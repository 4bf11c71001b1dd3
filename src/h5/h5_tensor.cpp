#include "h5/h5_tensor.hpp"

#include <algorithm>
#include <vector>

#include "h5/h5_check.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_types.hpp"

namespace ddpt {
namespace {

// bfloat16 tensors are stored as float32 (exact) and marked with this attribute.
constexpr const char* kTorchDtypeAttribute = "torch_dtype";

// Chunks of at most this size for whole tensors (checkpoints): HDF5 chunks must stay under
// 4 GiB, and smaller chunks bound the memory a reader needs for one checksum verification.
constexpr int64_t kTensorChunkBytes = int64_t{16} << 20;

}  // namespace

void write_tensor(hid_t parent, const std::string& name, const torch::Tensor& tensor, bool writer) {
  const bool bf16 = tensor.scalar_type() == torch::kBFloat16;
  torch::Tensor data = (bf16 ? tensor.detach().to(torch::kFloat) : tensor.detach()).cpu();
  if (data.dim() == 0) data = data.reshape({1});  // chunked data needs rank >= 1
  H5Dataset dataset = H5Dataset::create(parent, name, data.scalar_type(), data.sizes().vec(),
                                        H5I_INVALID_HID, kTensorChunkBytes);
  dataset.write_rows(0, writer ? data : data.narrow(0, 0, 0));
  if (bf16) write_attribute(dataset.id(), kTorchDtypeAttribute, std::string("bfloat16"));
}

void write_row(hid_t parent, const std::string& name, const torch::Tensor& row, int64_t index,
               int64_t rows) {
  const torch::Tensor data = row.detach().cpu().reshape({1, -1});
  H5Dataset::create(parent, name, data.scalar_type(), {rows, data.size(1)}, H5I_INVALID_HID,
                    kTensorChunkBytes)
      .write_rows(index, data);
}

torch::Tensor read_tensor(hid_t parent, const std::string& name) {
  if (!has_object(parent, name))
    throw DataError("object '" + name + "' is missing", Raised::kAllRanks);
  H5Id dataset(DDPT_CHECK_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)));
  H5Id file_type(DDPT_CHECK_H5(H5Dget_type(dataset.get())));
  const std::optional<torch::ScalarType> read_type = tensor_type_for(file_type.get());
  if (!read_type) {
    throw DataError("dataset '" + name + "' is " + describe_h5_type(file_type.get()) +
                        ", which ddptrain does not read",
                    Raised::kAllRanks);
  }
  const torch::ScalarType dtype = *read_type;
  H5Id space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  const int rank = DDPT_CHECK_H5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  DDPT_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  std::vector<int64_t> shape(dims.begin(), dims.end());
  torch::Tensor out = torch::empty(shape, torch::TensorOptions().dtype(dtype));
  if (out.numel() > 0) {
    try {
      DDPT_CHECK_H5(H5Dread(dataset.get(), h5_memory_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                            out.data_ptr()));
    } catch (const H5Error& e) {
      // Name the object: "dataset '/model/2.weight': data error detected by Fletcher32 ...".
      std::string full_name(256, '\0');
      const ssize_t length = H5Iget_name(dataset.get(), full_name.data(), full_name.size());
      full_name.resize(length > 0 ? static_cast<size_t>(std::min<ssize_t>(length, 255)) : 0);
      throw DataError("dataset '" + (full_name.empty() ? name : full_name) +
                          "': " + describe_failed_read(dataset.get(), e.stack()),
                      Raised::kThisRank);
    }
  }
  if (has_attribute(dataset.get(), kTorchDtypeAttribute) &&
      read_string_attribute(dataset.get(), kTorchDtypeAttribute) == "bfloat16") {
    return out.to(torch::kBFloat16);
  }
  return out;
}

bool has_object(hid_t parent, const std::string& name) {
  return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0;
}

// Opens the object and asks its identifier: the same calls on every HDF5 version, where
// H5Oget_info_by_name changed its signature in 1.12.
H5I_type_t object_type(hid_t parent, const std::string& name) {
  if (!has_object(parent, name)) return H5I_BADID;
  const H5Id object(H5Oopen(parent, name.c_str(), H5P_DEFAULT));
  if (!object.valid()) {
    H5Eclear2(H5E_DEFAULT);  // a dangling soft or external link
    return H5I_BADID;
  }
  return H5Iget_type(object.get());
}

}  // namespace ddpt
