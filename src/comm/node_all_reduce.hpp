// The gradient all-reduce of ranks that all run on one node, through memory they share instead of
// messages. Each buffer (a gradient bucket) is one POSIX shared-memory segment holding every
// rank's copy side by side, and each rank's bucket *is* its copy, so backward accumulates straight
// into shared memory. To sum, rank r adds up block r of the buffer (its 1/N of the elements)
// across all copies and writes the sum into every copy; two flag barriers in the segment (rank
// arrived, rank done) order this, so no data is copied in or out and each value is read and
// written once per rank. Every copy ends bitwise equal (one rank sums each element, in rank order).
//
// Why: on a node, MPI_Allreduce moves the data through its own buffers (Open MPI's vader:
// copy in, copy out, or a kernel copy per message) and busy-polls while it waits, and at 2 ranks
// on 2 cores that time comes straight out of compute. In training, this made the scaling MLP at
// 2 ranks 1.23x faster than MPI_Allreduce (README, Benchmarks).
//
// ZeRO-1 (ddp.zero = 1) uses the same buffers for a reduce-scatter: rank r writes the sum of its
// block into its own output only, so a rank reads 1/N of every copy and writes 1/N of the data.
// And the parameters themselves can live in memory the node's ranks share (allocate_common): one
// copy per node, in which each rank's optimizer updates its own block, so nothing is gathered.
//
// A rank that waits spins briefly, then sleeps on the flag (a futex on the shared page), so it
// does not take the core from its own rank's backward. A rank that never arrives is the
// watchdog's to report (dist.timeout_s), as in any collective.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/shared_memory.hpp"

namespace ddpt {

class NodeAllReduce {
 public:
  // `comm` (not owned) must outlive this object; nothing is collective until allocate().
  explicit NodeAllReduce(MPI_Comm comm);

  // Collective: a zeroed buffer of `numel` float32 or float64 values in memory shared by the
  // node's ranks. Undefined tensor (on every rank alike) when it cannot be: one rank, ranks on
  // several nodes, another dtype, or shared memory refused (a full /dev/shm: the failing rank
  // warns with the reason, and later calls do not try again). The buffer's memory stays mapped
  // while any tensor over it lives.
  torch::Tensor allocate(int64_t numel, torch::ScalarType dtype);
  // Collective: `numel` zeroed values of `dtype` in one segment that every rank maps: the same
  // memory on every rank, not a copy each. Undefined tensor (on every rank alike) when it cannot
  // be, as for allocate(); a refusal warns that `subject` stays one copy per rank.
  torch::Tensor allocate_common(int64_t numel, torch::ScalarType dtype, const std::string& subject);
  // Whether `tensor` is a whole buffer that allocate() returned.
  bool owns(const torch::Tensor& tensor) const;
  // Collective: sums `tensor` (owned) over the ranks, in place.
  void sum(const torch::Tensor& tensor);
  // Collective: this rank's block of the sum of `tensor` (owned; its length a multiple of the
  // world size) into `output` (contiguous, the block's length, same dtype). `tensor` itself is
  // only read. Returns the sum of the squares of every element of the sum (all ranks' blocks), in
  // double, the same bits on every rank: computed from the values as they are summed, and
  // exchanged in the barrier that ends the call (ZeRO-1's gradient norm and finite check).
  double reduce_scatter(const torch::Tensor& tensor, const torch::Tensor& output);

 private:
  struct Buffer {
    std::shared_ptr<SharedMemory> memory;
    std::vector<char*> copies;  // every rank's copy, by rank
    int64_t numel = 0;
    torch::ScalarType dtype = torch::kFloat;
    uint32_t sequence = 0;  // sums done on this buffer
  };
  // Whether every rank of the communicator shares this node (asked once, collectively).
  bool one_node();
  // Collective: a zeroed segment of `bytes` that every rank has mapped, or null on every rank
  // (the refusing rank warns: "`subject` not in shared memory (why): `fallback`", and later
  // calls do not try again).
  std::shared_ptr<SharedMemory> map_segment(size_t bytes, const std::string& subject,
                                            const std::string& fallback);
  // The flag barriers around a sum: every copy is complete (arrived), then every rank has read
  // what it needs of the others' copies (done).
  void wait_for_arrivals(const Buffer& buffer, uint32_t sequence);
  void wait_for_readers(const Buffer& buffer, uint32_t sequence);
  std::atomic<uint32_t>& arrived(const Buffer& buffer, int rank) const;
  std::atomic<uint32_t>& done(const Buffer& buffer, int rank) const;
  // Rank `rank`'s sum of squares of its block in the last reduce_scatter.
  double& block_squares(const Buffer& buffer, int rank) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int one_node_ = -1;  // unknown until asked
  int64_t segments_ = 0;
  std::unordered_map<const void*, Buffer> buffers_;  // by this rank's copy
};

}  // namespace ddpt
