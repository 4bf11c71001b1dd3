#include "h5/h5_tensor.hpp"

#include <algorithm>
#include <vector>

#include "h5/h5_check.hpp"

namespace ddpt {
namespace {

// Chunks of at most this size: HDF5 chunks must stay under 4 GiB, and smaller chunks bound the
// memory a reader needs for one checksum verification.
constexpr int64_t kMaxChunkBytes = int64_t{16} << 20;

hid_t memory_type_of(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat:
      return H5T_NATIVE_FLOAT;
    case torch::kDouble:
      return H5T_NATIVE_DOUBLE;
    case torch::kLong:
      return H5T_NATIVE_INT64;
    case torch::kByte:
      return H5T_NATIVE_UINT8;
    default:
      throw Error(std::string("HDF5: cannot store tensors of dtype ") + c10::toString(type),
                  ExitCode::kInternal, true);
  }
}

torch::ScalarType tensor_type_of(hid_t file_type, const std::string& name) {
  const H5T_class_t type_class = H5Tget_class(file_type);
  const size_t size = H5Tget_size(file_type);
  if (type_class == H5T_FLOAT && size == 4) return torch::kFloat;
  if (type_class == H5T_FLOAT && size == 8) return torch::kDouble;
  if (type_class == H5T_INTEGER && size == 8) return torch::kLong;
  if (type_class == H5T_INTEGER && size == 1) return torch::kByte;
  throw DataError("dataset '" + name + "' has a type ddptrain does not read");
}

// Shape as HDF5 wants it; 0-d tensors are stored as 1 element (chunked data needs rank >= 1).
std::vector<hsize_t> dims_of(const torch::Tensor& t) {
  std::vector<hsize_t> dims(t.sizes().begin(), t.sizes().end());
  if (dims.empty()) dims.push_back(1);
  return dims;
}

H5Id create_checksummed(hid_t parent, const std::string& name, hid_t type,
                        const std::vector<hsize_t>& dims, int64_t element_bytes) {
  H5Id space(DDPT_CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  H5Id properties(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
  std::vector<hsize_t> chunk = dims;
  int64_t row_bytes = element_bytes;
  for (size_t d = 1; d < chunk.size(); ++d) row_bytes *= static_cast<int64_t>(chunk[d]);
  chunk[0] = std::max<hsize_t>(
      1, std::min<hsize_t>(chunk[0], kMaxChunkBytes / std::max<int64_t>(row_bytes, 1)));
  for (auto& c : chunk) c = std::max<hsize_t>(c, 1);
  DDPT_CHECK_H5(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()));
  DDPT_CHECK_H5(H5Pset_fletcher32(properties.get()));
  return H5Id(DDPT_CHECK_H5(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT,
                                       properties.get(), H5P_DEFAULT)));
}

// Collective transfer when the file uses MPI-IO; a plain transfer otherwise.
H5Id transfer_properties(hid_t dataset) {
  H5Id transfer(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_XFER)));
  H5Id file(DDPT_CHECK_H5(H5Iget_file_id(dataset)));
  H5Id file_access(DDPT_CHECK_H5(H5Fget_access_plist(file.get())));
  if (H5Pget_driver(file_access.get()) == H5FD_MPIO) {
    DDPT_CHECK_H5(H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_COLLECTIVE));
  }
  return transfer;
}

}  // namespace

void write_tensor(hid_t parent, const std::string& name, const torch::Tensor& tensor, bool writer) {
  const torch::Tensor data = tensor.detach().cpu().contiguous();
  const hid_t type = memory_type_of(data.scalar_type());
  const std::vector<hsize_t> dims = dims_of(data);
  H5Id dataset = create_checksummed(parent, name, type, dims, data.element_size());
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  H5Id memory_space(
      DDPT_CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  if (!writer) {
    DDPT_CHECK_H5(H5Sselect_none(file_space.get()));
    DDPT_CHECK_H5(H5Sselect_none(memory_space.get()));
  }
  const H5Id transfer = transfer_properties(dataset.get());
  DDPT_CHECK_H5(H5Dwrite(dataset.get(), type, memory_space.get(), file_space.get(), transfer.get(),
                         data.data_ptr()));
}

void write_row(hid_t parent, const std::string& name, const torch::Tensor& row, int64_t index,
               int64_t rows) {
  const torch::Tensor data = row.detach().cpu().contiguous().view({-1});
  const hid_t type = memory_type_of(data.scalar_type());
  const std::vector<hsize_t> dims{static_cast<hsize_t>(rows), static_cast<hsize_t>(data.numel())};
  H5Id dataset = create_checksummed(parent, name, type, dims, data.element_size());
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  const hsize_t start[2] = {static_cast<hsize_t>(index), 0};
  const hsize_t count[2] = {1, dims[1]};
  DDPT_CHECK_H5(
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  H5Id memory_space(DDPT_CHECK_H5(H5Screate_simple(2, count, nullptr)));
  const H5Id transfer = transfer_properties(dataset.get());
  DDPT_CHECK_H5(H5Dwrite(dataset.get(), type, memory_space.get(), file_space.get(), transfer.get(),
                         data.data_ptr()));
}

torch::Tensor read_tensor(hid_t parent, const std::string& name) {
  if (!has_object(parent, name)) throw DataError("object '" + name + "' is missing");
  H5Id dataset(DDPT_CHECK_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)));
  H5Id file_type(DDPT_CHECK_H5(H5Dget_type(dataset.get())));
  const torch::ScalarType dtype = tensor_type_of(file_type.get(), name);
  H5Id space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  const int rank = DDPT_CHECK_H5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  DDPT_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  std::vector<int64_t> shape(dims.begin(), dims.end());
  torch::Tensor out = torch::empty(shape, torch::TensorOptions().dtype(dtype));
  if (out.numel() > 0) {
    try {
      DDPT_CHECK_H5(H5Dread(dataset.get(), memory_type_of(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                            out.data_ptr()));
    } catch (const H5Error& e) {
      // Name the object: "dataset '/model/2.weight': data error detected by Fletcher32 ...".
      std::string full_name(256, '\0');
      const ssize_t length = H5Iget_name(dataset.get(), full_name.data(), full_name.size());
      full_name.resize(length > 0 ? static_cast<size_t>(std::min<ssize_t>(length, 255)) : 0);
      throw DataError("dataset '" + (full_name.empty() ? name : full_name) + "': " + e.stack());
    }
  }
  return out;
}

bool has_object(hid_t parent, const std::string& name) {
  return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0;
}

}  // namespace ddpt
