// A 1-D dataset of variable-length UTF-8 strings (h5py reads it as an array of str): a column of
// text, such as the operations of a flight file (comm/flight_recorder.hpp). Written whole by one
// process (not collective).
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "h5/h5_id.hpp"

namespace ddpt {

// Variable-length UTF-8 strings: what h5py reads as str (these columns, string attributes).
H5Id utf8_string_type();

void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& values);
std::vector<std::string> read_strings(hid_t parent, const std::string& name);

}  // namespace ddpt
