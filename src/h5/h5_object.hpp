// What every HDF5 object ddptrain names (a file, a group, a dataset) has: an identifier the h5
// layer holds (RAII) and attributes, read and written as methods (HighFive's shape: an object
// "annotated" with attributes). Outside src/h5/ nothing sees an HDF5 identifier
// (tests/lint/source_rules.py).
#pragma once

#include <cstdint>
#include <string>

#include "h5/h5_id.hpp"

namespace ddpt {

class H5Object {
 public:
  // Scalar attributes: strings, int64 and float64 (HDF5 converts between integer and float types
  // on read; h5_attribute.hpp). Reading a missing attribute is an H5Error.
  void write_attribute(const std::string& name, const std::string& value) const;
  void write_attribute(const std::string& name, int64_t value) const;
  void write_attribute(const std::string& name, double value) const;
  bool has_attribute(const std::string& name) const;
  std::string read_string_attribute(const std::string& name) const;
  int64_t read_int_attribute(const std::string& name) const;
  double read_double_attribute(const std::string& name) const;

  // The identifier, for the h5 layer's own calls into the HDF5 library (and tests that craft
  // files HDF5's way).
  hid_t hdf5_id() const { return id_.get(); }

 protected:
  H5Object() = default;
  explicit H5Object(H5Id id) : id_(std::move(id)) {}
  H5Id id_;
};

}  // namespace ddpt
