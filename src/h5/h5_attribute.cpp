#include "h5/h5_attribute.hpp"

#include "h5/h5_check.hpp"
#include "h5/h5_strings.hpp"

namespace ddpt {

namespace {

void write_scalar_attribute(hid_t object, const std::string& name, hid_t type, const void* value) {
  H5Id space(DDPT_CHECK_H5(H5Screate(H5S_SCALAR)));
  H5Id attribute(
      DDPT_CHECK_H5(H5Acreate2(object, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  DDPT_CHECK_H5(H5Awrite(attribute.get(), type, value));
}

// Opens attribute `name` of `object`, which must hold one value: H5Aread writes every value the
// attribute's dataspace holds into the one-value buffer the readers below pass it, so a damaged
// file whose scalar attribute had become an array of a million overwrote the reader's stack
// (found by tests/fuzz).
H5Id open_single_value(hid_t object, const std::string& name) {
  H5Id attribute(DDPT_CHECK_H5(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  const H5Id space(DDPT_CHECK_H5(H5Aget_space(attribute.get())));
  const hssize_t values = DDPT_CHECK_H5(H5Sget_simple_extent_npoints(space.get()));
  if (values != 1) {
    throw DataError(
        "attribute '" + name + "' holds " + std::to_string(values) + " values; expected one",
        Raised::kThisRank);
  }
  return attribute;
}

}  // namespace

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  const H5Id type = utf8_string_type();
  const char* text = value.c_str();
  write_scalar_attribute(object, name, type.get(), &text);
}

void write_attribute(hid_t object, const std::string& name, int64_t value) {
  write_scalar_attribute(object, name, H5T_NATIVE_INT64, &value);
}

void write_attribute(hid_t object, const std::string& name, double value) {
  write_scalar_attribute(object, name, H5T_NATIVE_DOUBLE, &value);
}

std::string read_string_attribute(hid_t object, const std::string& name) {
  const H5Id attribute = open_single_value(object, name);
  const H5Id type = utf8_string_type();
  char* text = nullptr;
  DDPT_CHECK_H5(H5Aread(attribute.get(), type.get(), &text));
  std::string value = text ? text : "";
  H5free_memory(text);
  return value;
}

bool has_attribute(hid_t object, const std::string& name) {
  return DDPT_CHECK_H5(H5Aexists(object, name.c_str())) > 0;
}

int64_t read_int_attribute(hid_t object, const std::string& name) {
  const H5Id attribute = open_single_value(object, name);
  int64_t value = 0;
  DDPT_CHECK_H5(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value));
  return value;
}

double read_double_attribute(hid_t object, const std::string& name) {
  const H5Id attribute = open_single_value(object, name);
  double value = 0;
  DDPT_CHECK_H5(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

}  // namespace ddpt
