#include "io/staged_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "io/disk_space.hpp"
#include "util/check.hpp"
#include "util/error.hpp"

namespace ddpt {

std::filesystem::path staging_path(const std::filesystem::path& final_path) {
  return final_path.parent_path() / ("." + final_path.filename().string() + ".tmp");
}

void publish_staged(const std::filesystem::path& final_path) {
  std::filesystem::rename(staging_path(final_path), final_path);
}

int sync_to_disk(const std::filesystem::path& path) noexcept {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int error = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

void sync_and_publish(const std::filesystem::path& final_path, MPI_Comm comm,
                      const std::string& description, const std::string& kept) {
  const int error = sync_to_disk(staging_path(final_path));
  int largest = 0;
  DDPT_CHECK_MPI(MPI_Allreduce(&error, &largest, 1, MPI_INT, MPI_MAX, comm));
  int rank = 0;
  int size = 1;
  int world = 1;
  DDPT_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  DDPT_CHECK_MPI(MPI_Comm_size(comm, &size));
  DDPT_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  if (largest == 0) {
    if (rank == 0) publish_staged(final_path);
    return;
  }
  std::error_code ignored;
  if (rank == 0) std::filesystem::remove(staging_path(final_path), ignored);
  throw DataError(
      fmt::format("{} could not be written to the disk: {} ({}); {}", description,
                  std::strerror(largest), free_space_text(final_path.parent_path()), kept),
      size == world ? Raised::kAllRanks : Raised::kThisRank);
}

}  // namespace ddpt
