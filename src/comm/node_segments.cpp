#include "comm/node_segments.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "util/check.hpp"

namespace ddpt {
namespace {

// A name no other segment on the node has now: rank 0's pid, a process-wide count and the time.
std::string segment_name(int64_t pid, int64_t count, int64_t nanoseconds) {
  return "/ddptrain-" + std::to_string(pid) + "-" + std::to_string(count) + "-" +
         std::to_string(nanoseconds);
}

}  // namespace

NodeSegments::NodeSegments(MPI_Comm comm) : comm_(comm) {
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_, &size_));
}

bool NodeSegments::one_node() {
  if (one_node_ < 0) {
    MPI_Comm node = MPI_COMM_NULL;
    DDPT_CHECK_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
    int node_size = 0;
    const int status = MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    DDPT_CHECK_MPI(status);
    one_node_ = node_size == size_ ? 1 : 0;
  }
  return one_node_ == 1;
}

std::shared_ptr<SharedMemory> NodeSegments::map(size_t bytes, const std::string& subject,
                                                const std::string& fallback) {
  if (size_ == 1 || !one_node()) return nullptr;
  // Rank 0 creates the segment and tells the others its name; every rank maps it; only when all
  // have it is the name removed (the pages stay until the last mapping goes) and is it used.
  static std::atomic<int64_t> created{0};
  int64_t naming[3] = {0, 0, 0};  // pid, count, time; pid 0: not created
  std::string why;
  std::shared_ptr<SharedMemory> memory;
  if (rank_ == 0) {
    naming[1] = created++;
    naming[2] = std::chrono::steady_clock::now().time_since_epoch().count();
    memory = SharedMemory::create(segment_name(::getpid(), naming[1], naming[2]), bytes, why);
    if (memory) naming[0] = ::getpid();
  }
  DDPT_CHECK_MPI(MPI_Bcast(naming, 3, MPI_INT64_T, 0, comm_));
  const std::string name = segment_name(naming[0], naming[1], naming[2]);
  if (rank_ != 0 && naming[0] != 0) memory = SharedMemory::open(name, bytes, why);
  int mapped = memory ? 1 : 0;
  DDPT_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, comm_));
  if (rank_ == 0 && naming[0] != 0) SharedMemory::unlink(name);
  if (mapped == 0) {
    // Refused once (a full /dev/shm): every later request goes to MPI too, with one warning.
    if (!why.empty()) spdlog::warn("{} not in shared memory ({}): {}", subject, why, fallback);
    one_node_ = 0;
    return nullptr;
  }
  return memory;
}

}  // namespace ddpt
