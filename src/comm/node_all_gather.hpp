// ZeRO-3's all-gather of a unit's parameters among ranks that all run on one node, through memory
// they share instead of messages. A gather buffer is one copy per node, which every rank maps
// (ZeRO-3 gathers one unit at a time into each, ddp/sharded_parameters.hpp): rank r writes only
// block r of it (its shard), every rank reads all of it. A gather is
// three steps, each a flag per rank in the segment's header:
//   arrive(): once every rank is done reading the buffer's previous gather (released it), the
//     rank copies its block in and says so;
//   finish(): waits until every rank has arrived: the buffer is whole;
//   release(): the rank reads the buffer no more until its next arrive().
// Rank r overwrites block r only after every rank has released the previous gather, so no rank
// reads a mix of two gathers' values. Every rank gathers and releases each buffer in the same
// program order (what an MPI all-gather asks too), and a rank only ever waits for another's step
// that comes earlier in that order, so the waits cannot close a circle.
//
// Why: MPI_Allgather on a node copies each block through Open MPI's shared-memory buffers into
// every rank's own copy, and its communication thread polls on a core the compute needs; here each
// rank copies its block once and reads the others' where they are.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "comm/node_segments.hpp"

namespace ddpt {

class NodeAllGather {
 public:
  // `segments` (not owned: its communicator's) must outlive this object.
  explicit NodeAllGather(NodeSegments& segments);

  // Collective: a buffer of `numel` values of `dtype` (a multiple of the world size) in one segment
  // every rank maps, or an undefined tensor on every rank where that cannot be (one rank, ranks on
  // several nodes, shared memory refused). The memory stays mapped while any tensor over it lives.
  torch::Tensor allocate(int64_t numel, torch::ScalarType dtype, const std::string& subject);
  // Whether `tensor` is a buffer that allocate() returned, or the start of one, of a length that
  // divides by the world size (a gather may fill less than the whole buffer).
  bool owns(const torch::Tensor& tensor) const;

  // Waits until every rank has released the buffer's previous gather, copies `block` (one block's
  // values, same dtype) into this rank's block of `buffer` (blocks of buffer.numel() / size), and
  // says so. Returns the gather's number, for finish().
  uint32_t arrive(const torch::Tensor& block, const torch::Tensor& buffer);
  // Returns once every rank has arrived at gather `gather` of `buffer`.
  void finish(const torch::Tensor& buffer, uint32_t gather);
  // This rank will not read `buffer` until its next arrive().
  void release(const torch::Tensor& buffer);

 private:
  struct Buffer {
    std::shared_ptr<SharedMemory> memory;
    char* values = nullptr;
    int64_t numel = 0;
    torch::ScalarType dtype = torch::kFloat;
    uint32_t gathers = 0;  // begun by this rank
  };
  Buffer& buffer_of(const torch::Tensor& tensor);
  // The segment's header: per rank, gathers arrived at and gathers released.
  std::atomic<uint32_t>& arrived(const Buffer& buffer, int rank) const;
  std::atomic<uint32_t>& released(const Buffer& buffer, int rank) const;

  NodeSegments& segments_;
  int rank_ = 0;
  int size_ = 1;
  std::unordered_map<const void*, Buffer> buffers_;  // by their values
};

}  // namespace ddpt
