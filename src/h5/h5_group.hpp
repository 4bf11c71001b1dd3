// HDF5 groups: the folders of a file (its root is the group "/"). Functions that take a
// `parent` accept a file or a group id alike, as HDF5's own location calls do.
#pragma once

#include <string>
#include <vector>

#include "h5/h5_id.hpp"

namespace ddpt {

class H5Group {
 public:
  // Creates group `name` under `parent`.
  static H5Group create(hid_t parent, const std::string& name);
  // Opens group `name` under `parent` ("/" under a file: its root); H5Error if it is missing.
  static H5Group open(hid_t parent, const std::string& name);
  hid_t id() const { return group_.get(); }

 private:
  explicit H5Group(H5Id group) : group_(std::move(group)) {}
  H5Id group_;
};

// Whether a link `name` exists under `parent`.
bool has_object(hid_t parent, const std::string& name);
// What `name` under `parent` is (H5I_GROUP, H5I_DATASET, ...), or H5I_BADID when nothing is there.
H5I_type_t object_type(hid_t parent, const std::string& name);
// Names of the links in a file or group, in name order.
std::vector<std::string> list_members(hid_t group);

}  // namespace ddpt
