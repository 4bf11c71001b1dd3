#include "h5/h5_node.hpp"

#include "h5/h5_dataset.hpp"
#include "h5/h5_group.hpp"
#include "h5/h5_row_series.hpp"
#include "h5/h5_series.hpp"
#include "h5/h5_strings.hpp"
#include "h5/h5_tensor.hpp"

namespace ddpt {

bool H5Node::has(const std::string& name) const {
  return has_object(id_.get(), name);
}

H5Kind H5Node::kind_of(const std::string& name) const {
  switch (object_type(id_.get(), name)) {
    case H5I_BADID:
      return H5Kind::kNone;
    case H5I_GROUP:
      return H5Kind::kGroup;
    case H5I_DATASET:
      return H5Kind::kDataset;
    default:
      return H5Kind::kOther;
  }
}

std::vector<std::string> H5Node::members() const {
  return list_members(id_.get());
}

H5Group H5Node::create_group(const std::string& name) const {
  return H5Group::create(id_.get(), name);
}

H5Group H5Node::open_group(const std::string& name) const {
  return H5Group::open(id_.get(), name);
}

H5Dataset H5Node::open_dataset(const std::string& name) const {
  return H5Dataset::open(id_.get(), name);
}

H5Dataset H5Node::create_dataset(const std::string& name, torch::ScalarType dtype,
                                 const std::vector<int64_t>& shape, H5StoredAs stored) const {
  const hid_t file_type = stored == H5StoredAs::kUint16   ? H5T_STD_U16LE
                          : stored == H5StoredAs::kUint32 ? H5T_STD_U32LE
                                                          : H5I_INVALID_HID;
  return H5Dataset::create(id_.get(), name, dtype, shape, file_type);
}

H5Series H5Node::create_series(const std::string& name, H5SeriesType type) const {
  return H5Series::create(id_.get(), name, type);
}

std::vector<double> H5Node::read_series(const std::string& name) const {
  return H5Series::read_all(id_.get(), name);
}

H5RowSeries H5Node::create_row_series(const std::string& name, int64_t width) const {
  return H5RowSeries::create(id_.get(), name, width);
}

std::vector<std::vector<double>> H5Node::read_row_series(const std::string& name) const {
  return H5RowSeries::read_all(id_.get(), name);
}

void H5Node::write_tensor(const std::string& name, const torch::Tensor& tensor, bool writer) const {
  ddpt::write_tensor(id_.get(), name, tensor, writer);
}

void H5Node::write_row(const std::string& name, const torch::Tensor& row, int64_t index,
                       int64_t rows) const {
  ddpt::write_row(id_.get(), name, row, index, rows);
}

void H5Node::write_tensor_part(const std::string& name, const std::vector<int64_t>& shape,
                               int64_t first, const torch::Tensor& part) const {
  ddpt::write_tensor_part(id_.get(), name, shape, first, part);
}

torch::Tensor H5Node::read_tensor_part(const std::string& name, int64_t first,
                                       int64_t count) const {
  return ddpt::read_tensor_part(id_.get(), name, first, count);
}

torch::Tensor H5Node::read_tensor(const std::string& name) const {
  return ddpt::read_tensor(id_.get(), name);
}

void H5Node::write_strings(const std::string& name, const std::vector<std::string>& values) const {
  ddpt::write_strings(id_.get(), name, values);
}

std::vector<std::string> H5Node::read_strings(const std::string& name) const {
  return ddpt::read_strings(id_.get(), name);
}

}  // namespace ddpt
