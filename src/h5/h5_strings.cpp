#include "h5/h5_strings.hpp"

#include "h5/h5_check.hpp"

namespace ddpt {

H5Id utf8_string_type() {
  H5Id type(DDPT_CHECK_H5(H5Tcopy(H5T_C_S1)));
  DDPT_CHECK_H5(H5Tset_size(type.get(), H5T_VARIABLE));
  DDPT_CHECK_H5(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& values) {
  const H5Id type = utf8_string_type();
  const hsize_t count = values.size();
  const H5Id space(DDPT_CHECK_H5(H5Screate_simple(1, &count, nullptr)));
  const H5Id dataset(DDPT_CHECK_H5(H5Dcreate2(parent, name.c_str(), type.get(), space.get(),
                                              H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  if (values.empty()) return;
  std::vector<const char*> texts;
  texts.reserve(values.size());
  for (const std::string& value : values) texts.push_back(value.c_str());
  DDPT_CHECK_H5(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, texts.data()));
}

std::vector<std::string> read_strings(hid_t parent, const std::string& name) {
  const H5Id dataset(DDPT_CHECK_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)));
  const H5Id space(DDPT_CHECK_H5(H5Dget_space(dataset.get())));
  if (DDPT_CHECK_H5(H5Sget_simple_extent_ndims(space.get())) != 1) {
    throw DataError("dataset '" + name + "' is not a 1-D column of strings", Raised::kThisRank);
  }
  const hssize_t count = DDPT_CHECK_H5(H5Sget_simple_extent_npoints(space.get()));
  std::vector<char*> texts(static_cast<size_t>(count), nullptr);
  const H5Id type = utf8_string_type();
  if (count > 0) {
    DDPT_CHECK_H5(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, texts.data()));
  }
  std::vector<std::string> values;
  values.reserve(texts.size());
  for (char* text : texts) {
    values.emplace_back(text ? text : "");
    H5free_memory(text);
  }
  return values;
}

}  // namespace ddpt
