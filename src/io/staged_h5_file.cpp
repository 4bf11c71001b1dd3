#include "io/staged_h5_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "h5/h5_check.hpp"
#include "h5/h5_lock.hpp"
#include "io/disk_space.hpp"
#include "io/staged_file.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace ddpt {
namespace {

// Why a write failed, from errno where it names a cause the user can act on (ROMIO reports a
// failed write as MPI_ERR_IO, "input/output error", whatever the system said); "" otherwise.
std::string write_failure_cause(int error_number) {
  switch (error_number) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EROFS:
    case EIO:
      return std::string(std::strerror(error_number)) + "; ";
    default:
      return "";
  }
}

// The half-written file goes: it is left open in HDF5 (see write_staged_h5) and removed from the
// disk, so nothing half-written stays behind and older outputs are untouched.
void discard(std::optional<H5File>& file, const fs::path& staged) {
  const Hdf5Lock lock;
  if (file) file->abandon();
  std::error_code ignored;
  fs::remove(staged, ignored);
}

}  // namespace

void write_staged_h5(const fs::path& final_path, MPI_Comm comm, const StagedOutput& output,
                     const std::function<void(H5File&)>& write) {
  const fs::path staged = staging_path(final_path);
  std::optional<H5File> file;
  try {
    {
      const Hdf5Lock lock;
      file = H5File::create(staged.string(), comm);
    }
    write(*file);
    const Hdf5Lock lock;
    file->close();  // collective with a communicator; writes what HDF5 still buffers
  } catch (const Error& e) {
    // The failed write's errno: an HDF5 call's failure keeps it; otherwise errno, if nothing since
    // has set it.
    const auto* h5 = dynamic_cast<const H5Error*>(&e);
    const int error_number = h5 != nullptr ? h5->system_error() : errno;
    discard(file, staged);
    throw DataError(fmt::format("{} could not be written ({}{}; {}): {}", output.description,
                                write_failure_cause(error_number),
                                free_space_text(final_path.parent_path()), output.kept, e.what()),
                    Raised::kThisRank);
  } catch (...) {
    discard(file, staged);
    throw;
  }
}

void check_staged_space(const fs::path& final_path, int64_t bytes, HostGroup& group,
                        const StagedOutput& output) {
  const bool rank0 = group.rank() == 0;
  const fs::path staged = staging_path(final_path);
  const auto error =
      static_cast<int>(group.max(fmt::format("space for {} checked", output.description),
                                 rank0 ? check_space(staged, bytes) : 0));
  if (error == 0) return;
  std::error_code ignored;
  if (rank0) fs::remove(staged, ignored);
  throw DataError(fmt::format("{} cannot be written: {} (it needs about {}; {}); nothing was "
                              "written, {}",
                              output.description, std::strerror(error), human_bytes(bytes),
                              free_space_text(final_path.parent_path()), output.kept),
                  Raised::kAllRanks);
}

}  // namespace ddpt
