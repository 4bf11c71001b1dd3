#include "h5/h5_group.hpp"

#include "h5/h5_check.hpp"

namespace ddpt {

H5Group H5Group::create(hid_t parent, const std::string& name) {
  // No modification time in the header: the same content makes the same file, byte for byte.
  H5Id creation(DDPT_CHECK_H5(H5Pcreate(H5P_GROUP_CREATE)));
  DDPT_CHECK_H5(H5Pset_obj_track_times(creation.get(), false));
  return H5Group(H5Id(
      DDPT_CHECK_H5(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, creation.get(), H5P_DEFAULT))));
}

H5Group H5Group::open(hid_t parent, const std::string& name) {
  return H5Group(H5Id(DDPT_CHECK_H5(H5Gopen2(parent, name.c_str(), H5P_DEFAULT))));
}

bool has_object(hid_t parent, const std::string& name) {
  return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0;
}

// Opens the object and asks its identifier: the same calls on every HDF5 version, where
// H5Oget_info_by_name changed its signature in 1.12.
H5I_type_t object_type(hid_t parent, const std::string& name) {
  if (!has_object(parent, name)) return H5I_BADID;
  const H5Id object(H5Oopen(parent, name.c_str(), H5P_DEFAULT));
  if (!object.valid()) {
    H5Eclear2(H5E_DEFAULT);  // a dangling soft or external link
    return H5I_BADID;
  }
  return H5Iget_type(object.get());
}

std::vector<std::string> list_members(hid_t group) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  DDPT_CHECK_H5(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names));
  return names;
}

}  // namespace ddpt
