#include "io/staged_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

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

void write_staged_file(const std::filesystem::path& final_path,
                       const std::function<void(std::ostream&)>& write) {
  const std::filesystem::path staged = staging_path(final_path);
  int error = 0;
  {
    std::ofstream out(staged, std::ios::binary | std::ios::trunc);
    write(out);
    out.flush();
    error = !out ? EIO : sync_to_disk(staged);
  }
  if (error != 0) {
    std::filesystem::remove(staged);
    throw DataError("cannot write " + final_path.string() + ": " + std::strerror(error),
                    Raised::kThisRank);
  }
  publish_staged(final_path);
}

void sync_and_publish(const std::filesystem::path& final_path, HostGroup& group,
                      const std::string& description, const std::string& kept) {
  const int error = sync_to_disk(staging_path(final_path));
  const auto largest =
      static_cast<int>(group.max("sync of " + description + " to the disk", error));
  int world = 1;
  DDPT_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  if (largest == 0) {
    if (group.rank() == 0) publish_staged(final_path);
    return;
  }
  std::error_code ignored;
  if (group.rank() == 0) std::filesystem::remove(staging_path(final_path), ignored);
  throw DataError(
      fmt::format("{} could not be written to the disk: {} ({}); {}", description,
                  std::strerror(largest), free_space_text(final_path.parent_path()), kept),
      group.size() == world ? Raised::kAllRanks : Raised::kThisRank);
}

}  // namespace ddpt
