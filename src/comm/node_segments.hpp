// Shared-memory segments that every rank of a communicator maps, when all of them run on one
// node: the memory of the node-shared collectives (comm/node_all_reduce.hpp,
// comm/node_all_gather.hpp). Once a segment is refused (a full /dev/shm), later requests are not
// tried again: what would have been shared goes through MPI, with one warning.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "comm/shared_memory.hpp"

namespace ddpt {

// A segment's layout: flags one cache line apart (so ranks do not share lines), values from a
// page boundary.
constexpr size_t kFlagBytes = 64;
constexpr size_t kPageBytes = 4096;
inline size_t whole_pages(size_t bytes) {
  return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
}

class NodeSegments {
 public:
  // `comm` (not owned) must outlive this object; nothing is collective until asked.
  explicit NodeSegments(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Collective (once, then remembered): whether every rank of the communicator shares this node
  // and no segment was refused.
  bool one_node();
  // Collective: a zeroed segment of `bytes` that every rank has mapped, or null on every rank:
  // more than one rank, one node, and no refusal (the refusing rank warns: "`subject` not in
  // shared memory (why): `fallback`").
  std::shared_ptr<SharedMemory> map(size_t bytes, const std::string& subject,
                                    const std::string& fallback);

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int one_node_ = -1;  // unknown until asked
};

}  // namespace ddpt
