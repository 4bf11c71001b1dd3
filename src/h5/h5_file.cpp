#include "h5/h5_file.hpp"

#include <filesystem>
#include <vector>

#include "h5/h5_check.hpp"

namespace ddpt {

H5File H5File::create(const std::string& path, MPI_Comm comm) {
  detail::silence_hdf5_error_printing();
  H5Id access(DDPT_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS)));
  if (comm != MPI_COMM_NULL) DDPT_CHECK_H5(H5Pset_fapl_mpio(access.get(), comm, MPI_INFO_NULL));
  H5Id file(DDPT_CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get())));
  return H5File(std::move(file), path);
}

H5File H5File::create_for_swmr(const std::string& path) {
  detail::silence_hdf5_error_printing();
  H5Id access(DDPT_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS)));
  DDPT_CHECK_H5(H5Pset_libver_bounds(access.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  H5Id file(DDPT_CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get())));
  return H5File(std::move(file), path);
}

H5File H5File::open_read(const std::string& path) {
  detail::silence_hdf5_error_printing();
  if (!std::filesystem::is_regular_file(path)) {
    throw DataError("'" + path + "': no such file", Raised::kAllRanks);
  }
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) file = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
  if (file < 0) {
    H5Eclear2(H5E_DEFAULT);
    throw DataError("'" + path + "' is not a readable HDF5 file (truncated or corrupt?)",
                    Raised::kAllRanks);
  }
  return H5File(H5Id(file), path);
}

void H5File::flush() {
  DDPT_CHECK_H5(H5Fflush(file_.get(), H5F_SCOPE_LOCAL));
}

void H5File::start_swmr_write() {
  DDPT_CHECK_H5(H5Fstart_swmr_write(file_.get()));
}

H5Id create_group(hid_t parent, const std::string& name) {
  return H5Id(
      DDPT_CHECK_H5(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
}

H5Id open_group(hid_t parent, const std::string& name) {
  return H5Id(DDPT_CHECK_H5(H5Gopen2(parent, name.c_str(), H5P_DEFAULT)));
}

namespace {

void write_scalar_attribute(hid_t object, const std::string& name, hid_t type, const void* value) {
  H5Id space(DDPT_CHECK_H5(H5Screate(H5S_SCALAR)));
  H5Id attribute(
      DDPT_CHECK_H5(H5Acreate2(object, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  DDPT_CHECK_H5(H5Awrite(attribute.get(), type, value));
}

// Variable-length UTF-8 strings: what h5py reads as str.
H5Id string_type() {
  H5Id type(DDPT_CHECK_H5(H5Tcopy(H5T_C_S1)));
  DDPT_CHECK_H5(H5Tset_size(type.get(), H5T_VARIABLE));
  DDPT_CHECK_H5(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

}  // namespace

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  const H5Id type = string_type();
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
  H5Id attribute(DDPT_CHECK_H5(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  const H5Id type = string_type();
  char* text = nullptr;
  DDPT_CHECK_H5(H5Aread(attribute.get(), type.get(), &text));
  std::string value = text ? text : "";
  H5free_memory(text);
  return value;
}

bool has_attribute(hid_t object, const std::string& name) {
  return DDPT_CHECK_H5(H5Aexists(object, name.c_str())) > 0;
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

int64_t read_int_attribute(hid_t object, const std::string& name) {
  H5Id attribute(DDPT_CHECK_H5(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  int64_t value = 0;
  DDPT_CHECK_H5(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value));
  return value;
}

double read_double_attribute(hid_t object, const std::string& name) {
  H5Id attribute(DDPT_CHECK_H5(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  double value = 0;
  DDPT_CHECK_H5(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

}  // namespace ddpt
