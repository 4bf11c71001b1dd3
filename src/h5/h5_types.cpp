#include "h5/h5_types.hpp"

#include "util/error.hpp"

namespace ddpt {

hid_t h5_memory_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat:
      return H5T_NATIVE_FLOAT;
    case torch::kDouble:
      return H5T_NATIVE_DOUBLE;
    case torch::kChar:
      return H5T_NATIVE_INT8;
    case torch::kShort:
      return H5T_NATIVE_INT16;
    case torch::kInt:
      return H5T_NATIVE_INT32;
    case torch::kLong:
      return H5T_NATIVE_INT64;
    case torch::kByte:
      return H5T_NATIVE_UINT8;
    default:
      throw Error(std::string("HDF5: cannot store tensors of dtype ") + c10::toString(type),
                  ExitCode::kInternal, Raised::kAllRanks);
  }
}

std::optional<torch::ScalarType> tensor_type_for(hid_t file_type) {
  const H5T_class_t type_class = H5Tget_class(file_type);
  const size_t size = H5Tget_size(file_type);
  if (type_class == H5T_FLOAT) {
    if (size == 4) return torch::kFloat;
    if (size == 8) return torch::kDouble;
    return std::nullopt;
  }
  if (type_class != H5T_INTEGER) return std::nullopt;
  if (H5Tget_sign(file_type) == H5T_SGN_NONE) {
    if (size == 1) return torch::kByte;
    if (size == 2) return torch::kInt;   // uint16 widened
    if (size == 4) return torch::kLong;  // uint32 widened
    return std::nullopt;                 // uint64 does not fit int64
  }
  if (size == 1) return torch::kChar;
  if (size == 2) return torch::kShort;
  if (size == 4) return torch::kInt;
  if (size == 8) return torch::kLong;
  return std::nullopt;
}

std::string describe_h5_type(hid_t file_type) {
  const size_t bits = H5Tget_size(file_type) * 8;
  switch (H5Tget_class(file_type)) {
    case H5T_FLOAT:
      return "float" + std::to_string(bits);
    case H5T_INTEGER:
      return (H5Tget_sign(file_type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    default:
      return "an unsupported type";
  }
}

}  // namespace ddpt
