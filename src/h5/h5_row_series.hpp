// A 2-D float64 dataset of a fixed width that grows one row at a time (chunked, unlimited rows):
// one value per rank at each metrics row (metrics.h5's /ranks/compute_s, [rows, ranks]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "h5/h5_id.hpp"

namespace ddpt {

class H5RowSeries {
 public:
  // Creates an empty series `name` under `parent`, `width` values a row.
  static H5RowSeries create(hid_t parent, const std::string& name, int64_t width);

  // Appends one row (`width` values).
  void append(const std::vector<double>& row);
  int64_t rows() const { return rows_; }
  int64_t width() const { return width_; }

  // Every row of series `name` under `parent`.
  static std::vector<std::vector<double>> read_all(hid_t parent, const std::string& name);

 private:
  H5RowSeries(H5Id dataset, int64_t width) : dataset_(std::move(dataset)), width_(width) {}
  H5Id dataset_;
  int64_t width_;
  int64_t rows_ = 0;
};

}  // namespace ddpt
