// HDF5 files, groups and attributes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "h5/h5_id.hpp"

namespace ddpt {

class H5File {
 public:
  // Creates (truncates) `path`. With `comm` set, the file uses the MPI-IO driver and the call is
  // collective over `comm`; MPI_COMM_NULL opens it from this process alone.
  static H5File create(const std::string& path, MPI_Comm comm = MPI_COMM_NULL);
  // Creates (truncates) `path` from this process alone in the newest file format, ready for
  // start_swmr_write(): a file that others read while it grows (metrics.h5).
  static H5File create_for_swmr(const std::string& path);
  // Opens `path` read-only from this process alone; DataError (exit 3) naming the file if it is
  // missing or not HDF5. A file that a writer holds in SWMR mode (a running job's metrics.h5, or
  // one whose job was killed) is opened as a single-writer/multiple-reader reader.
  static H5File open_read(const std::string& path);

  hid_t id() const { return file_.get(); }
  const std::string& path() const { return path_; }
  // Writes buffered data to the file, so that a reader (or a killed job) sees it.
  void flush();
  // From now on readers may open the file while this process appends to existing datasets; no
  // new objects or attributes can be created.
  void start_swmr_write();

 private:
  H5File(H5Id file, std::string path) : file_(std::move(file)), path_(std::move(path)) {}
  H5Id file_;
  std::string path_;
};

// Creates group `name` under `parent` (a file or group).
H5Id create_group(hid_t parent, const std::string& name);
H5Id open_group(hid_t parent, const std::string& name);

// Scalar attributes on a file, group or dataset.
void write_attribute(hid_t object, const std::string& name, const std::string& value);
void write_attribute(hid_t object, const std::string& name, int64_t value);
void write_attribute(hid_t object, const std::string& name, double value);
std::string read_string_attribute(hid_t object, const std::string& name);
bool has_attribute(hid_t object, const std::string& name);
// Names of the links in a file or group, in name order.
std::vector<std::string> list_members(hid_t group);
int64_t read_int_attribute(hid_t object, const std::string& name);
double read_double_attribute(hid_t object, const std::string& name);

}  // namespace ddpt
