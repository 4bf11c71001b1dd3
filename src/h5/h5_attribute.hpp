// Scalar attributes on a file, group or dataset: strings, int64 and float64 (HDF5 converts
// between integer and float types on read).
#pragma once

#include <cstdint>
#include <string>

#include "h5/h5_id.hpp"

namespace ddpt {

void write_attribute(hid_t object, const std::string& name, const std::string& value);
void write_attribute(hid_t object, const std::string& name, int64_t value);
void write_attribute(hid_t object, const std::string& name, double value);
bool has_attribute(hid_t object, const std::string& name);
std::string read_string_attribute(hid_t object, const std::string& name);
int64_t read_int_attribute(hid_t object, const std::string& name);
double read_double_attribute(hid_t object, const std::string& name);

}  // namespace ddpt
