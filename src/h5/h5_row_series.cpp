#include "h5/h5_row_series.hpp"

#include <algorithm>

#include "h5/h5_check.hpp"
#include "h5/h5_dataset.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {
// About 64 KiB a chunk: rows are appended one at a time and read whole.
constexpr hsize_t kChunkValues = 8192;
}  // namespace

H5RowSeries H5RowSeries::create(hid_t parent, const std::string& name, int64_t width) {
  const hsize_t initial[2] = {0, static_cast<hsize_t>(width)};
  const hsize_t maximum[2] = {H5S_UNLIMITED, static_cast<hsize_t>(width)};
  H5Id space(DDPT_CHECK_H5(H5Screate_simple(2, initial, maximum)));
  H5Id properties(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
  const hsize_t chunk[2] = {std::max<hsize_t>(1, kChunkValues / initial[1]), initial[1]};
  DDPT_CHECK_H5(H5Pset_chunk(properties.get(), 2, chunk));
  H5Id dataset(DDPT_CHECK_H5(H5Dcreate2(parent, name.c_str(), H5T_IEEE_F64LE, space.get(),
                                        H5P_DEFAULT, properties.get(), H5P_DEFAULT)));
  return H5RowSeries(std::move(dataset), width);
}

void H5RowSeries::append(const std::vector<double>& row) {
  if (static_cast<int64_t>(row.size()) != width_) {
    throw Error("H5RowSeries: a row of " + std::to_string(row.size()) + " values in a series " +
                    std::to_string(width_) + " wide",
                ExitCode::kInternal, Raised::kThisRank);
  }
  const hsize_t extent[2] = {static_cast<hsize_t>(rows_) + 1, static_cast<hsize_t>(width_)};
  DDPT_CHECK_H5(H5Dset_extent(dataset_.get(), extent));
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(dataset_.get())));
  const hsize_t start[2] = {static_cast<hsize_t>(rows_), 0};
  const hsize_t count[2] = {1, static_cast<hsize_t>(width_)};
  DDPT_CHECK_H5(
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  H5Id memory_space(DDPT_CHECK_H5(H5Screate_simple(2, count, nullptr)));
  DDPT_CHECK_H5(H5Dwrite(dataset_.get(), H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(),
                         H5P_DEFAULT, row.data()));
  ++rows_;
}

std::vector<std::vector<double>> H5RowSeries::read_all(hid_t parent, const std::string& name) {
  H5Id dataset(DDPT_CHECK_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)));
  H5Id space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  if (DDPT_CHECK_H5(H5Sget_simple_extent_ndims(space.get())) != 2) {
    throw DataError("dataset '" + name + "' is not two-dimensional", Raised::kThisRank);
  }
  hsize_t dims[2] = {0, 0};
  DDPT_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims, nullptr));
  const double values = static_cast<double>(dims[0]) * static_cast<double>(dims[1]);
  check_stored_size(
      dataset.get(),
      values * sizeof(double) > 0x1p62 ? INT64_MAX : static_cast<int64_t>(values * sizeof(double)),
      "dataset '" + name + "'");
  std::vector<double> flat(dims[0] * dims[1]);
  if (!flat.empty()) {
    DDPT_CHECK_H5(
        H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat.data()));
  }
  std::vector<std::vector<double>> rows(dims[0]);
  for (hsize_t r = 0; r < dims[0]; ++r) {
    rows[r].assign(flat.begin() + static_cast<std::ptrdiff_t>(r * dims[1]),
                   flat.begin() + static_cast<std::ptrdiff_t>((r + 1) * dims[1]));
  }
  return rows;
}

}  // namespace ddpt
