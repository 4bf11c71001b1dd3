// data.type = hdf5: rows of an inputs array and a targets array in one HDF5 file. Nothing is
// loaded up front; each batch is one hyperslab read of exactly the rows it needs, so a file
// larger than a node's memory still trains, and every rank reads only its own rows.
//
// Layout: inputs [samples, ...] of any numeric type (read as float32); targets either [samples]
// integers (class labels: classification, classes from the targets' `classes` attribute or
// data.classes) or [samples] / [samples, k] floats (regression).
#pragma once

#include "data/dataset.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"

namespace ddpt {

class H5ArrayDataset final : public Dataset {
 public:
  // Opens and checks the file: DataError (exit 3) naming the file and dataset for a missing
  // dataset, a shape or type that does not fit, unequal row counts, or a class label outside
  // [0, classes) (every label is read once, in blocks).
  H5ArrayDataset(const std::string& path, const std::string& inputs, const std::string& targets,
                 int64_t classes_if_unset);
  int64_t size() const override { return inputs_.rows(); }
  Batch get(const torch::Tensor& indices) const override;
  DatasetInfo info() const override { return info_; }
  std::string describe() const override;

 private:
  H5File file_;
  H5Dataset inputs_;
  H5Dataset targets_;
  DatasetInfo info_;
};

// Rows asked for in any order, with repeats, as one ascending read and the way back.
struct RowRequest {
  std::vector<int64_t> sorted_rows;  // ascending, no repeats: what is read
  torch::Tensor order;               // int64: row k of the answer is sorted_rows[order[k]]
};
// `indices` (1-D, any integer type) as a RowRequest; Error if one is outside [0, rows).
RowRequest plan_row_read(const torch::Tensor& indices, int64_t rows);
// The requested rows of `dataset`, in the requested order (one hyperslab read).
torch::Tensor read_rows(const H5Dataset& dataset, const RowRequest& request);

}  // namespace ddpt
