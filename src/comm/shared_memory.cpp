#include "comm/shared_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddpt {
namespace {

// The segment's descriptor, closed on every path (the mapping does not need it).
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string failed(const char* call, const std::string& name, int error) {
  return std::string(call) + "(" + name + "): " + std::strerror(error);
}

void* map(int fd, size_t bytes) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return data == MAP_FAILED ? nullptr : data;
}

}  // namespace

std::shared_ptr<SharedMemory> SharedMemory::create(const std::string& name, size_t bytes,
                                                   std::string& why) {
  const Fd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (fd.get() < 0) {
    why = failed("shm_open", name, errno);
    return nullptr;
  }
  // posix_fallocate, not ftruncate: tmpfs then holds every page now, or says ENOSPC now.
  if (const int error = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); error != 0) {
    why = failed("posix_fallocate", name, error);
    unlink(name);
    return nullptr;
  }
  void* data = map(fd.get(), bytes);
  if (data == nullptr) {
    why = failed("mmap", name, errno);
    unlink(name);
    return nullptr;
  }
  return std::shared_ptr<SharedMemory>(new SharedMemory(data, bytes));
}

std::shared_ptr<SharedMemory> SharedMemory::open(const std::string& name, size_t bytes,
                                                 std::string& why) {
  const Fd fd(::shm_open(name.c_str(), O_RDWR, 0));
  if (fd.get() < 0) {
    why = failed("shm_open", name, errno);
    return nullptr;
  }
  void* data = map(fd.get(), bytes);
  if (data == nullptr) {
    why = failed("mmap", name, errno);
    return nullptr;
  }
  return std::shared_ptr<SharedMemory>(new SharedMemory(data, bytes));
}

void SharedMemory::unlink(const std::string& name) {
  ::shm_unlink(name.c_str());
}

SharedMemory::~SharedMemory() {
  ::munmap(data_, bytes_);
}

}  // namespace ddpt
