// The gradient all-reduce of ranks that all run on one node, through memory they share instead of
// messages. Each buffer (a gradient bucket) is one POSIX shared-memory segment holding every
// rank's copy side by side, and each rank's bucket *is* its copy, so backward accumulates straight
// into shared memory. A sum goes in two halves:
//   arrive(): the rank's copy is complete; it says so in a flag in the segment (no waiting).
//   finish(): once every rank has arrived, the buffer's chunks (runs of up to kChunkElements
//   values, cut at the ranks' blocks) are summed across the copies, each by whichever of the
//   node's threads takes it first, from a counter in the segment; then it waits for every chunk.
// help() sums chunks without waiting for the others' chunks: MpiComm runs it on a helper thread
// at the lowest priority, so a rank sums with cycles its own compute leaves over.
// Why chunks taken by whoever is free, and not rank r summing block r: the rank whose backward
// ends first sums what the others have handed over while it would only wait, and the last rank
// finds the earlier buckets done. The ranks' cores are never exactly as fast (a few percent apart
// on the 2-core VM: benchmarks.md, "Choices measured": node-shared sums); with fixed blocks the
// slowest rank did its share on top of its own longer backward, and every step waited for it.
// Each element is added in rank order by one thread, so every copy ends bitwise equal, whoever
// summed it. No data is copied in or out: each value is read once and written where it lands.
//
// Why shared memory at all: on a node, MPI_Allreduce moves the data through its own buffers
// (Open MPI's vader: copy in, copy out, or a kernel copy per message) and busy-polls while it
// waits, and at 2 ranks on 2 cores that time comes straight out of compute. In training, this
// made the scaling MLP at 2 ranks faster than MPI_Allreduce did (benchmarks.md, "Choices
// measured": node-shared sums).
//
// ZeRO-1 (ddp.zero = 1) uses the same buffers for a reduce-scatter: block r's sum is written into
// rank r's own copy only (in place), so a rank's block of its bucket becomes its summed gradient,
// and the other copies' blocks are only read. The sum of the squares of the summed values comes
// with it, chunk by chunk, added in chunk order: the same bits on every rank.
// And the parameters themselves can live in memory the node's ranks share (allocate_common): one
// copy per node, in which each rank's optimizer updates its own block, so nothing is gathered.
//
// A thread that waits spins briefly, then sleeps on the flag (a futex on the shared page), so it
// does not take the core from its own rank's backward. A rank that never arrives is the
// watchdog's to report (dist.timeout_s), as in any collective.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/node_segments.hpp"

namespace ddpt {

enum class NodeSumKind {
  kAllReduce,      // the sum written into every copy
  kReduceScatter,  // block r's sum written into rank r's copy, with the sum of squares
};

// A sum on one buffer between arrive() and finish().
struct NodeSum {
  const void* buffer = nullptr;  // the Buffer (internal)
  uint32_t sequence = 0;         // sums begun on that buffer, this one included
  NodeSumKind kind = NodeSumKind::kAllReduce;
};

class NodeAllReduce {
 public:
  // Values per chunk: 64 KiB of float, a few microseconds to sum; about 40 chunks per rank's
  // block of the scaling MLP's buckets, so the threads that are free share the work finely.
  static constexpr int64_t kChunkElements = 16384;

  // `segments` (not owned: its communicator's) must outlive this object; nothing is collective
  // until allocate().
  explicit NodeAllReduce(NodeSegments& segments);

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

  // Collective, in every rank's program order: this rank's copy of `tensor` (owned) holds its
  // values and is not written until finish() returns. Returns at once. kReduceScatter needs a
  // length that divides by the world size.
  NodeSum arrive(const torch::Tensor& tensor, NodeSumKind kind);
  // Once every rank has arrived (it waits for that), sums chunks of `sum` that no thread has
  // taken; returns when none is left. Any thread of this rank, also several at once.
  void help(const NodeSum& sum);
  // help(), then waits until every chunk is summed: the sum is in place (kAllReduce: in every
  // copy; kReduceScatter: this rank's block, in its copy), and no rank reads this rank's copy any
  // more.
  void finish(const NodeSum& sum);
  // After finish() of a kReduceScatter: the sum of the squares of every element of the sum (all
  // blocks), in double, the same bits on every rank.
  double squares(const NodeSum& sum) const;

  // This rank's block of `tensor` (owned), where a kReduceScatter leaves its sum.
  torch::Tensor own_block(const torch::Tensor& tensor) const;

 private:
  struct Chunk {
    int64_t begin = 0;
    int64_t end = 0;
    int owner = 0;  // the rank whose block it lies in
  };
  struct Buffer {
    std::shared_ptr<SharedMemory> memory;
    std::vector<char*> copies;  // every rank's copy, by rank
    int64_t numel = 0;
    torch::ScalarType dtype = torch::kFloat;
    uint32_t sequence = 0;      // sums begun on this buffer
    std::vector<Chunk> chunks;  // block by block, in order
  };
  static const Buffer& buffer_of(const NodeSum& sum) {
    return *static_cast<const Buffer*>(sum.buffer);
  }
  void sum_chunk(const Buffer& buffer, size_t chunk, NodeSumKind kind) const;
  // The segment's header: a flag per rank (its arrivals), the counters of chunks taken and
  // summed (both count on over every sum of the buffer), and each chunk's sum of squares.
  std::atomic<uint32_t>& arrived(const Buffer& buffer, int rank) const;
  std::atomic<uint32_t>& chunks_taken(const Buffer& buffer) const;
  std::atomic<uint32_t>& chunks_summed(const Buffer& buffer) const;
  double* chunk_squares(const Buffer& buffer) const;

  NodeSegments& segments_;
  int rank_ = 0;
  int size_ = 1;
  // By this rank's copy. Elements stay where they are when others are added: a NodeSum points to
  // its Buffer.
  std::unordered_map<const void*, Buffer> buffers_;
};

}  // namespace ddpt
