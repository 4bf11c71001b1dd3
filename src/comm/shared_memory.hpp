// A POSIX shared-memory segment mapped into this process (shm_open + mmap), unmapped when the
// last owner lets go. The ranks of one node map the same segment to exchange data without
// messages (comm/node_all_reduce.hpp). The creator reserves every page up front, so a full
// /dev/shm is an error here and not a SIGBUS on first touch.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace ddpt {

class SharedMemory {
 public:
  // Creates segment `name` ("/..."), `bytes` long and zero-filled, and maps it. Returns null and
  // sets `why` (the failing call and errno's text) if it cannot.
  static std::shared_ptr<SharedMemory> create(const std::string& name, size_t bytes,
                                              std::string& why);
  // Maps an existing segment `name` of `bytes`; null and `why` if it cannot.
  static std::shared_ptr<SharedMemory> open(const std::string& name, size_t bytes,
                                            std::string& why);
  // Removes the name; mappings stay valid until unmapped.
  static void unlink(const std::string& name);

  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  char* data() const { return static_cast<char*>(data_); }
  size_t size() const { return bytes_; }

 private:
  SharedMemory(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_;
  size_t bytes_;
};

}  // namespace ddpt
