// One HDF5 dataset read or written a block of rows at a time: the training data a rank samples
// from (hyperslab reads of only the rows it needs, so the file never has to fit in memory) and
// the predictions every rank writes its share of.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "h5/h5_id.hpp"
#include "h5/h5_object.hpp"

namespace ddpt {

// A box of a dataset's index space: what one hyperslab selects.
struct ElementBox {
  std::vector<hsize_t> start;
  std::vector<hsize_t> extent;
};
// The elements [first, first + count) of an array of `shape` (row-major order) as boxes, in that
// order: at most 2 x rank - 1 of them (a partial first and last row at each level around a box of
// whole rows).
std::vector<ElementBox> element_boxes(const std::vector<int64_t>& shape, int64_t first,
                                      int64_t count);

// DataError naming `where` if reading `bytes` from `dataset` would read more than the file stores
// for it (plus a small allowance). A damaged header can give a dataset of a few stored bytes
// billions of elements, which HDF5 reads as fill values: each dataset that ddptrain reads whole
// (checkpoints, predictions, metrics) is written whole and uncompressed, so its stored bytes bound
// what reading it may allocate.
void check_stored_size(hid_t dataset, int64_t bytes, const std::string& where);

class H5File;  // h5_file.hpp

class H5Dataset : public H5Object {
 public:
  // Opens `name` in `file`. DataError naming the file and the object if it is missing, is not a
  // dataset, or holds a type ddptrain does not read (see h5_types.hpp).
  static H5Dataset open(const H5File& file, const std::string& name);
  // Opens `name` under `parent` (a group or file id); messages name it by its path in the file
  // ("dataset '/model/w'"), and the caller says which file.
  static H5Dataset open(hid_t parent, const std::string& name);
  // Collective (MPI-IO file): creates `name` under `parent` with `shape`, chunked by rows (about
  // `chunk_bytes` per chunk) with the Fletcher32 checksum. Rows are written from `dtype` tensors
  // and stored as `file_type` (default: the same type; e.g. H5T_STD_U16LE for int64 token ids).
  // 1 MiB: a reader of a few random rows decodes and checksums little more than it needs.
  static constexpr int64_t kRowChunkBytes = int64_t{1} << 20;
  static H5Dataset create(hid_t parent, const std::string& name, torch::ScalarType dtype,
                          const std::vector<int64_t>& shape, hid_t file_type = H5I_INVALID_HID,
                          int64_t chunk_bytes = kRowChunkBytes);

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }
  torch::ScalarType dtype() const { return dtype_; }  // in memory (uint16 is widened to int32)
  const std::string& stored_type() const { return stored_type_; }  // "uint16", "float32", ...
  const std::string& name() const { return name_; }
  std::string where() const;  // "'file.h5' dataset 'inputs'", for messages

  // Rows `sorted_rows` (ascending, no repeats) as one tensor [n, shape[1:]...]; one read of a
  // union of hyperslabs, consecutive rows merged into one block.
  torch::Tensor read_rows(const std::vector<int64_t>& sorted_rows) const;
  // Rows [first, first + count).
  torch::Tensor read_range(int64_t first, int64_t count) const;
  // The whole dataset, in its shape (a scalar dataspace gives a 0-d tensor).
  torch::Tensor read_all() const;
  // Collective (MPI-IO file): this rank writes `block` into rows [first, first + block.size(0));
  // a rank with nothing to write passes an empty block.
  void write_rows(int64_t first, const torch::Tensor& block);
  // Elements [first, first + count) in row-major order (the dataset flattened), as a 1-D tensor.
  // For sharded state: each rank reads the run of elements it owns.
  torch::Tensor read_elements(int64_t first, int64_t count) const;
  // Collective (MPI-IO file): this rank writes the 1-D `values` into elements
  // [first, first + values.numel()) in row-major order; a rank with nothing passes an empty one.
  void write_elements(int64_t first, const torch::Tensor& values);

 private:
  H5Dataset() = default;
  // Opens `name` under `parent`; messages say "'file_path' dataset 'shown_name'".
  static H5Dataset open_as(hid_t parent, const std::string& name, std::string file_path,
                           std::string shown_name);
  // An uninitialised tensor of `shape` and dtype(); DataError if it cannot be allocated.
  torch::Tensor allocate(const std::vector<int64_t>& shape) const;
  torch::Tensor read_selection(hid_t file_space, int64_t rows) const;
  // Reads (or, collectively, writes) the 1-D contiguous `values` from (into) elements
  // [first, first + values.numel()), box by box.
  void transfer_elements(int64_t first, const torch::Tensor& values, bool write) const;
  // Reads into `out` (laid out like the memory selection); DataError naming the dataset on
  // failure.
  void read_into(void* out, hid_t memory_space, hid_t file_space) const;

  std::vector<int64_t> shape_;
  torch::ScalarType dtype_ = torch::kFloat;
  std::string stored_type_;
  std::string file_path_;
  std::string name_;
};

}  // namespace ddpt
