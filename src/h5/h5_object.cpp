#include "h5/h5_object.hpp"

#include "h5/h5_attribute.hpp"

namespace ddpt {

void H5Object::write_attribute(const std::string& name, const std::string& value) const {
  ddpt::write_attribute(id_.get(), name, value);
}

void H5Object::write_attribute(const std::string& name, int64_t value) const {
  ddpt::write_attribute(id_.get(), name, value);
}

void H5Object::write_attribute(const std::string& name, double value) const {
  ddpt::write_attribute(id_.get(), name, value);
}

bool H5Object::has_attribute(const std::string& name) const {
  return ddpt::has_attribute(id_.get(), name);
}

std::string H5Object::read_string_attribute(const std::string& name) const {
  return ddpt::read_string_attribute(id_.get(), name);
}

int64_t H5Object::read_int_attribute(const std::string& name) const {
  return ddpt::read_int_attribute(id_.get(), name);
}

double H5Object::read_double_attribute(const std::string& name) const {
  return ddpt::read_double_attribute(id_.get(), name);
}

}  // namespace ddpt
