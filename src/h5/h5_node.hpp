// A location that holds links: a file (its root group) or a group (HighFive's shape: a node with
// the groups, datasets, tensors and series under it, by name, and attributes of its own).
// Collective in a file opened with the MPI-IO driver wherever h5_tensor.hpp says so.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "h5/h5_object.hpp"

namespace ddpt {

class H5Dataset;    // h5_dataset.hpp
class H5Group;      // h5_group.hpp
class H5Series;     // h5_series.hpp
class H5RowSeries;  // h5_row_series.hpp

// What a name under a node is.
enum class H5Kind { kNone, kGroup, kDataset, kOther };
// The values of a series (H5Series).
enum class H5SeriesType { kFloat64, kInt64 };
// How a dataset created from int64 tensors is stored: as it is in memory, or narrower (token ids
// of a small vocabulary).
enum class H5StoredAs { kInMemoryType, kUint16, kUint32 };

class H5Node : public H5Object {
 public:
  bool has(const std::string& name) const;  // a link `name` exists
  // kNone when nothing is there (or a dangling link).
  H5Kind kind_of(const std::string& name) const;
  std::vector<std::string> members() const;  // the names of its links, in name order

  H5Group create_group(const std::string& name) const;
  H5Group open_group(const std::string& name) const;  // H5Error if it is missing
  // Messages name the dataset by its path in the file; the caller says which file
  // (H5Dataset::open(const H5File&, ...) names the file too).
  H5Dataset open_dataset(const std::string& name) const;
  // Collective (MPI-IO file): H5Dataset::create.
  H5Dataset create_dataset(const std::string& name, torch::ScalarType dtype,
                           const std::vector<int64_t>& shape,
                           H5StoredAs stored = H5StoredAs::kInMemoryType) const;
  H5Series create_series(const std::string& name, H5SeriesType type) const;
  std::vector<double> read_series(const std::string& name) const;  // every value, as doubles
  H5RowSeries create_row_series(const std::string& name, int64_t width) const;
  std::vector<std::vector<double>> read_row_series(const std::string& name) const;  // every row

  // Tensors as datasets (h5_tensor.hpp, where each is described).
  void write_tensor(const std::string& name, const torch::Tensor& tensor, bool writer) const;
  void write_row(const std::string& name, const torch::Tensor& row, int64_t index,
                 int64_t rows) const;
  void write_tensor_part(const std::string& name, const std::vector<int64_t>& shape, int64_t first,
                         const torch::Tensor& part) const;
  torch::Tensor read_tensor_part(const std::string& name, int64_t first, int64_t count) const;
  torch::Tensor read_tensor(const std::string& name) const;
  // Columns of text (h5_strings.hpp).
  void write_strings(const std::string& name, const std::vector<std::string>& values) const;
  std::vector<std::string> read_strings(const std::string& name) const;

 protected:
  using H5Object::H5Object;
};

}  // namespace ddpt
