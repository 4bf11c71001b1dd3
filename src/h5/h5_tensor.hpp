// Tensors as HDF5 datasets, with the Fletcher32 checksum filter on every dataset.
//
// In a file opened with the MPI-IO driver, dataset creation and writes are collective: every
// rank calls these functions for the same names in the same order (HDF5's parallel rule). Filtered
// datasets can only be written collectively, so for a replicated tensor every rank calls H5Dwrite
// with a collective transfer, the writer selecting the whole tensor and the others nothing.
#pragma once

#include <torch/torch.h>

#include <string>

#include "h5/h5_group.hpp"
#include "h5/h5_id.hpp"

namespace ddpt {

// Collective (MPI-IO file): dataset `name` under `parent` with `tensor`'s shape and dtype
// (float32, float64, int32, int64, uint8; bfloat16 as float32, see h5_types.hpp); only ranks with
// `writer` set contribute data.
void write_tensor(hid_t parent, const std::string& name, const torch::Tensor& tensor, bool writer);
// Collective (MPI-IO file): dataset `name` of shape [rows, row.numel()]; this rank writes `row`
// into row `index`. For per-rank state (RNG).
void write_row(hid_t parent, const std::string& name, const torch::Tensor& row, int64_t index,
               int64_t rows);
// Collective (MPI-IO file): dataset `name` of `shape` and `part`'s dtype, filled by the ranks
// together: this rank's 1-D `part` goes to elements [first, first + part.numel()) in row-major
// order. For state sharded over ranks (ZeRO-1's optimizer moments).
void write_tensor_part(hid_t parent, const std::string& name, const std::vector<int64_t>& shape,
                       int64_t first, const torch::Tensor& part);
// Elements [first, first + count) of dataset `name` in row-major order, as a 1-D tensor (read by
// this rank alone).
torch::Tensor read_tensor_part(hid_t parent, const std::string& name, int64_t first, int64_t count);
// Reads the whole dataset (independently, by this rank alone; H5Dataset::read_all). Errors name
// the object by its path in the file; the caller names the file.
torch::Tensor read_tensor(hid_t parent, const std::string& name);

}  // namespace ddpt
