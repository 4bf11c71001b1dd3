// A 1-D dataset that grows one value at a time (chunked, unlimited): a metric's time series.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "h5/h5_id.hpp"
#include "h5/h5_node.hpp"

namespace ddpt {

class H5Series {
 public:
  using Type = H5SeriesType;

  // Creates an empty series `name` under `parent`.
  static H5Series create(hid_t parent, const std::string& name, Type type);

  // Appends one value (converted to the series' type).
  void append(double value);
  int64_t size() const { return size_; }

  // Every value of series `name` under `parent`, as doubles.
  static std::vector<double> read_all(hid_t parent, const std::string& name);

 private:
  H5Series(H5Id dataset, Type type) : dataset_(std::move(dataset)), type_(type) {}
  H5Id dataset_;
  Type type_;
  int64_t size_ = 0;
};

}  // namespace ddpt
