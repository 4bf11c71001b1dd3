// HDF5 groups: the folders of a file (its root is the group "/"), nodes like the file itself
// (h5_node.hpp). The functions that take a `parent` id accept a file or a group id alike, as
// HDF5's own location calls do: the h5 layer's, under H5Node's methods.
#pragma once

#include <string>
#include <vector>

#include "h5/h5_id.hpp"
#include "h5/h5_node.hpp"

namespace ddpt {

class H5Group : public H5Node {
 public:
  // Creates group `name` under `parent`.
  static H5Group create(hid_t parent, const std::string& name);
  // Opens group `name` under `parent` ("/" under a file: its root); H5Error if it is missing.
  static H5Group open(hid_t parent, const std::string& name);

 private:
  explicit H5Group(H5Id group) : H5Node(std::move(group)) {}
};

// Whether a link `name` exists under `parent`.
bool has_object(hid_t parent, const std::string& name);
// What `name` under `parent` is (H5I_GROUP, H5I_DATASET, ...), or H5I_BADID when nothing is there.
H5I_type_t object_type(hid_t parent, const std::string& name);
// Names of the links in a file or group, in name order.
std::vector<std::string> list_members(hid_t group);

}  // namespace ddpt
