#include "h5/h5_file.hpp"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "h5/h5_check.hpp"
#include "h5/h5_probe.hpp"
#include "h5/h5_probe_contract.hpp"
#include "util/check.hpp"

namespace ddpt {
namespace {

// Metadata reads a SWMR reader makes before it gives up on a checksum that does not match. Such a
// reader retries in case the writer was midway through writing that metadata, sleeping 1 ns, 2 ns,
// 4 ns, ... between attempts; HDF5's default of 100 attempts sleeps up to 2^100 ns, so a damaged
// file, whose checksums never match, hung `ddptrain inspect` and a resumed run's metrics reader
// forever (found by tests/fuzz). 20 attempts sleep about 1 ms in all.
constexpr unsigned kSwmrReadAttempts = probe::kSwmrReadAttempts;

// MPI-IO hints for files ddptrain writes collectively (checkpoints, predictions), freed with it.
// ROMIO's data sieving for writes: a write whose file view has holes (HDF5 writes a dataset's
// chunks with one datatype over their addresses) is done as read, modify, write of the whole
// extent. Every checkpoint was read back whole as it was written (benchmarks.md, "Choices
// measured": no data sieving for writes). Without it ROMIO writes each contiguous piece (a whole
// chunk) as it is.
// Other MPI-IO layers ignore hints they do not know.
class WriteHints {
 public:
  WriteHints() {
    DDPT_CHECK_MPI(MPI_Info_create(&info_));
    DDPT_CHECK_MPI(MPI_Info_set(info_, "romio_ds_write", "disable"));
  }
  ~WriteHints() { MPI_Info_free(&info_); }
  WriteHints(const WriteHints&) = delete;
  WriteHints& operator=(const WriteHints&) = delete;
  MPI_Info get() const { return info_; }

 private:
  MPI_Info info_ = MPI_INFO_NULL;
};

std::atomic<bool> g_files_abandoned{false};

}  // namespace

bool hdf5_files_abandoned() noexcept {
  return g_files_abandoned.load();
}

void H5File::abandon() noexcept {
  if (id_.valid()) g_files_abandoned = true;
  id_.abandon();
}

H5File H5File::create(const std::string& path, MPI_Comm comm) {
  detail::silence_hdf5_error_printing();
  H5Id access(DDPT_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS)));
  if (comm != MPI_COMM_NULL) {
    const WriteHints hints;  // HDF5 keeps a copy
    DDPT_CHECK_H5(H5Pset_fapl_mpio(access.get(), comm, hints.get()));
  }
  // No modification times in the root group's header (groups and datasets: h5_group.cpp,
  // h5_dataset.cpp): the same content makes the same file, byte for byte.
  H5Id creation(DDPT_CHECK_H5(H5Pcreate(H5P_FILE_CREATE)));
  DDPT_CHECK_H5(H5Pset_obj_track_times(creation.get(), false));
  H5Id file(DDPT_CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, creation.get(), access.get())));
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
  probe_hdf5_file(path);  // a damaged file that would crash libhdf5 is refused here
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    H5Id access(DDPT_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS)));
    DDPT_CHECK_H5(H5Pset_metadata_read_attempts(access.get(), kSwmrReadAttempts));
    file = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, access.get());
  }
  if (file < 0) {
    H5Eclear2(H5E_DEFAULT);
    throw DataError("'" + path + "' is not a readable HDF5 file (truncated or corrupt?)",
                    Raised::kAllRanks);
  }
  return H5File(H5Id(file), path);
}

void H5File::close() {
  try {
    DDPT_CHECK_H5(H5Fclose(id_.abandon()));
  } catch (...) {
    g_files_abandoned = true;  // HDF5 keeps a file whose close failed
    throw;
  }
}

void H5File::flush() {
  DDPT_CHECK_H5(H5Fflush(id_.get(), H5F_SCOPE_LOCAL));
}

void H5File::start_swmr_write() {
  DDPT_CHECK_H5(H5Fstart_swmr_write(id_.get()));
}

bool is_hdf5_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char signature[8] = {};
  return in.read(signature, 8) && std::memcmp(signature, "\x89HDF\r\n\x1a\n", 8) == 0;
}

}  // namespace ddpt
