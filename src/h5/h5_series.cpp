#include "h5/h5_series.hpp"

#include "h5/h5_check.hpp"
#include "h5/h5_dataset.hpp"

namespace ddpt {
namespace {
// Rows per chunk: a metric row is 8 bytes; 1024 rows keep appends cheap and files small.
constexpr hsize_t kSeriesChunkRows = 1024;
}  // namespace

H5Series H5Series::create(hid_t parent, const std::string& name, Type type) {
  const hsize_t initial = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  H5Id space(DDPT_CHECK_H5(H5Screate_simple(1, &initial, &unlimited)));
  H5Id properties(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
  DDPT_CHECK_H5(H5Pset_chunk(properties.get(), 1, &kSeriesChunkRows));
  const hid_t file_type = type == Type::kInt64 ? H5T_STD_I64LE : H5T_IEEE_F64LE;
  H5Id dataset(DDPT_CHECK_H5(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                        properties.get(), H5P_DEFAULT)));
  return H5Series(std::move(dataset), type);
}

void H5Series::append(double value) {
  const hsize_t new_size = static_cast<hsize_t>(size_) + 1;
  DDPT_CHECK_H5(H5Dset_extent(dataset_.get(), &new_size));
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(dataset_.get())));
  const hsize_t start = static_cast<hsize_t>(size_);
  const hsize_t count = 1;
  DDPT_CHECK_H5(
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr));
  H5Id memory_space(DDPT_CHECK_H5(H5Screate_simple(1, &count, nullptr)));
  if (type_ == Type::kInt64) {
    const int64_t integer = static_cast<int64_t>(value);
    DDPT_CHECK_H5(H5Dwrite(dataset_.get(), H5T_NATIVE_INT64, memory_space.get(), file_space.get(),
                           H5P_DEFAULT, &integer));
  } else {
    DDPT_CHECK_H5(H5Dwrite(dataset_.get(), H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(),
                           H5P_DEFAULT, &value));
  }
  size_ = static_cast<int64_t>(new_size);
}

std::vector<double> H5Series::read_all(hid_t parent, const std::string& name) {
  H5Id dataset(DDPT_CHECK_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)));
  H5Id space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  hsize_t rows = 0;
  if (DDPT_CHECK_H5(H5Sget_simple_extent_ndims(space.get())) != 1) {
    throw DataError("dataset '" + name + "' is not one-dimensional", Raised::kThisRank);
  }
  DDPT_CHECK_H5(H5Sget_simple_extent_dims(space.get(), &rows, nullptr));
  const int64_t bytes = rows > static_cast<hsize_t>(INT64_MAX) / sizeof(double)
                            ? INT64_MAX
                            : static_cast<int64_t>(rows * sizeof(double));
  check_stored_size(dataset.get(), bytes, "dataset '" + name + "'");
  std::vector<double> values(rows);
  if (rows > 0) {
    DDPT_CHECK_H5(
        H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  }
  return values;
}

}  // namespace ddpt
