#include "h5/h5_tensor.hpp"

#include <algorithm>
#include <vector>

#include "h5/h5_check.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_types.hpp"

namespace ddpt {
namespace {

// bfloat16 tensors are stored as float32 (exact) and marked with this attribute.
constexpr const char* kTorchDtypeAttribute = "torch_dtype";

// Chunks of at most this size: HDF5 chunks must stay under 4 GiB, and smaller chunks bound the
// memory a reader needs for one checksum verification.
constexpr int64_t kMaxChunkBytes = int64_t{16} << 20;

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
  const bool bf16 = tensor.scalar_type() == torch::kBFloat16;
  const torch::Tensor data =
      (bf16 ? tensor.detach().to(torch::kFloat) : tensor.detach()).cpu().contiguous();
  const hid_t type = h5_memory_type(data.scalar_type());
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
  if (bf16) write_attribute(dataset.get(), kTorchDtypeAttribute, std::string("bfloat16"));
}

void write_row(hid_t parent, const std::string& name, const torch::Tensor& row, int64_t index,
               int64_t rows) {
  const torch::Tensor data = row.detach().cpu().contiguous().view({-1});
  const hid_t type = h5_memory_type(data.scalar_type());
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
  const std::optional<torch::ScalarType> read_type = tensor_type_for(file_type.get());
  if (!read_type) {
    throw DataError("dataset '" + name + "' is " + describe_h5_type(file_type.get()) +
                    ", which ddptrain does not read");
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
      throw DataError("dataset '" + (full_name.empty() ? name : full_name) + "': " + e.stack());
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

}  // namespace ddpt
