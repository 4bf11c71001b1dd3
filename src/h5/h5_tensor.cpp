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
// A checkpoint in 4 MiB chunks also wrote much faster than in 16 MiB ones, at 1 rank and at 2
// (benchmarks.md, "Choices measured": 4 MiB chunks).
constexpr int64_t kTensorChunkBytes = int64_t{4} << 20;

}  // namespace

void write_tensor(hid_t parent, const std::string& name, const torch::Tensor& tensor, bool writer) {
  const bool bf16 = tensor.scalar_type() == torch::kBFloat16;
  const torch::ScalarType stored = bf16 ? torch::kFloat : tensor.scalar_type();
  // Chunked data needs rank >= 1. (Assigning {1} to the emptied vector instead made GCC 12 warn,
  // falsely, of a delete at an offset.)
  std::vector<int64_t> shape = tensor.dim() == 0 ? std::vector<int64_t>{1} : tensor.sizes().vec();
  H5Dataset dataset =
      H5Dataset::create(parent, name, stored, shape, H5I_INVALID_HID, kTensorChunkBytes);
  if (writer) {
    dataset.write_rows(0, tensor.detach().to(torch::kCPU, stored).reshape(shape));
  } else {
    // The collective write with no rows: the values of the other ranks are not even read (they
    // may be a shape-only stand-in, or on a GPU).
    shape[0] = 0;
    dataset.write_rows(0, torch::empty(shape, torch::TensorOptions().dtype(stored)));
  }
  if (bf16) dataset.write_attribute(kTorchDtypeAttribute, std::string("bfloat16"));
}

void write_row(hid_t parent, const std::string& name, const torch::Tensor& row, int64_t index,
               int64_t rows) {
  const torch::Tensor data = row.detach().cpu().reshape({1, -1});
  H5Dataset::create(parent, name, data.scalar_type(), {rows, data.size(1)}, H5I_INVALID_HID,
                    kTensorChunkBytes)
      .write_rows(index, data);
}

void write_tensor_part(hid_t parent, const std::string& name, const std::vector<int64_t>& shape,
                       int64_t first, const torch::Tensor& part) {
  const std::vector<int64_t> stored = shape.empty() ? std::vector<int64_t>{1} : shape;
  H5Dataset::create(parent, name, part.scalar_type(), stored, H5I_INVALID_HID, kTensorChunkBytes)
      .write_elements(first, part);
}

torch::Tensor read_tensor_part(hid_t parent, const std::string& name, int64_t first,
                               int64_t count) {
  return H5Dataset::open(parent, name).read_elements(first, count);
}

torch::Tensor read_tensor(hid_t parent, const std::string& name) {
  const H5Dataset dataset = H5Dataset::open(parent, name);
  const torch::Tensor out = dataset.read_all();
  if (dataset.has_attribute(kTorchDtypeAttribute) &&
      dataset.read_string_attribute(kTorchDtypeAttribute) == "bfloat16") {
    return out.to(torch::kBFloat16);
  }
  return out;
}

}  // namespace ddpt
