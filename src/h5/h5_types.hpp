// Which torch dtype an HDF5 dataset is read into, and which HDF5 type a tensor is written as.
//
// Read: float32, float64, int8..int64, uint8 as themselves; uint16 is widened to int32 and uint32
// to int64 (LibTorch 1.13 has no unsigned types wider than 8 bits). Written: float32, float64,
// int32, int64, uint8 as themselves; bfloat16 is stored as float32 (exact) with the attribute
// torch_dtype = "bfloat16", so h5py users see ordinary floats and read_tensor() gives bf16 back.
#pragma once

#include <hdf5.h>
#include <torch/torch.h>

#include <optional>
#include <string>

namespace ddpt {

// The native HDF5 type of a tensor dtype that ddptrain writes; Error for others.
hid_t h5_memory_type(torch::ScalarType type);
// The dtype a dataset of `file_type` is read into; nullopt if ddptrain does not read it.
std::optional<torch::ScalarType> tensor_type_for(hid_t file_type);
// "uint16", "float32", "string", ...: how the file stores it, for messages.
std::string describe_h5_type(hid_t file_type);

}  // namespace ddpt
