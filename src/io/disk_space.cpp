#include "io/disk_space.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

#include "util/byte_size.hpp"

namespace ddpt {

int64_t free_bytes(const std::filesystem::path& path) {
  std::filesystem::path dir = path;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
  if (dir.empty()) dir = ".";
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) return -1;
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

std::string free_space_text(const std::filesystem::path& path) {
  const int64_t free = free_bytes(path);
  return free < 0 ? "free space unknown" : human_bytes(free) + " free on its file system";
}

int check_space(const std::filesystem::path& path, int64_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int error = bytes > 0 ? posix_fallocate(fd, 0, bytes) : 0;
  if (error == EOPNOTSUPP || error == EINVAL) {  // no preallocation here (some NFS, older Lustre)
    const int64_t free = free_bytes(path);
    error = free >= 0 && free < bytes ? ENOSPC : 0;
  }
  ::close(fd);
  return error;
}

}  // namespace ddpt
