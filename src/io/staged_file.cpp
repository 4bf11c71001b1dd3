#include "io/staged_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "util/check.hpp"

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

int sync_staged_everywhere(const std::filesystem::path& final_path, MPI_Comm comm) {
  const int error = sync_to_disk(staging_path(final_path));
  int largest = 0;
  DDPT_CHECK_MPI(MPI_Allreduce(&error, &largest, 1, MPI_INT, MPI_MAX, comm));
  return largest;
}

}  // namespace ddpt
