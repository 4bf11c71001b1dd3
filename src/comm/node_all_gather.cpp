#include "comm/node_all_gather.hpp"

#include <algorithm>

#include "comm/shared_flag.hpp"
#include "util/error.hpp"

namespace ddpt {

NodeAllGather::NodeAllGather(NodeSegments& segments)
    : segments_(segments), rank_(segments.rank()), size_(segments.size()) {}

torch::Tensor NodeAllGather::allocate(int64_t numel, torch::ScalarType dtype,
                                      const std::string& subject) {
  if (numel % size_ != 0) {
    throw Error("NodeAllGather: a buffer's length must divide by the world size",
                ExitCode::kInternal, Raised::kThisRank);
  }
  const size_t header = whole_pages(kFlagBytes * 2 * static_cast<size_t>(size_));
  const size_t bytes = header + std::max<size_t>(1, numel * c10::elementSize(dtype));
  const std::shared_ptr<SharedMemory> memory =
      segments_.map(bytes, subject, "MPI_Allgather gathers them");
  if (!memory) return {};
  Buffer buffer;
  buffer.memory = memory;
  buffer.values = memory->data() + header;
  buffer.numel = numel;
  buffer.dtype = dtype;
  char* values = buffer.values;
  buffers_.emplace(values, std::move(buffer));
  return torch::from_blob(
      values, {numel}, [memory](void*) {}, torch::TensorOptions(dtype));
}

bool NodeAllGather::owns(const torch::Tensor& tensor) const {
  const auto found = buffers_.find(tensor.data_ptr());
  return found != buffers_.end() && tensor.numel() <= found->second.numel &&
         tensor.numel() % size_ == 0 && tensor.scalar_type() == found->second.dtype &&
         tensor.is_contiguous();
}

NodeAllGather::Buffer& NodeAllGather::buffer_of(const torch::Tensor& tensor) {
  if (!owns(tensor)) {
    throw Error("NodeAllGather: not a buffer of this rank's node-shared gathers",
                ExitCode::kInternal, Raised::kThisRank);
  }
  return buffers_.at(tensor.data_ptr());
}

std::atomic<uint32_t>& NodeAllGather::arrived(const Buffer& buffer, int rank) const {
  return *reinterpret_cast<std::atomic<uint32_t>*>(buffer.memory->data() +
                                                   kFlagBytes * static_cast<size_t>(2 * rank));
}

std::atomic<uint32_t>& NodeAllGather::released(const Buffer& buffer, int rank) const {
  return *reinterpret_cast<std::atomic<uint32_t>*>(buffer.memory->data() +
                                                   kFlagBytes * static_cast<size_t>(2 * rank + 1));
}

uint32_t NodeAllGather::arrive(const torch::Tensor& block, const torch::Tensor& buffer) {
  Buffer& b = buffer_of(buffer);
  const int64_t length = buffer.numel() / size_;
  if (block.numel() != length || block.scalar_type() != b.dtype) {
    throw Error("NodeAllGather: the block must hold a world-size share of the buffer, same dtype",
                ExitCode::kInternal, Raised::kThisRank);
  }
  const uint32_t gather = ++b.gathers;
  // Nobody reads the previous gather's values any more: this rank's block may change.
  for (int r = 0; r < size_; ++r) wait_for_flag(released(b, r), gather - 1);
  torch::NoGradGuard no_grad;
  buffer.narrow(0, length * rank_, length).copy_(block);
  publish_flag(arrived(b, rank_), gather);
  return gather;
}

void NodeAllGather::finish(const torch::Tensor& buffer, uint32_t gather) {
  const Buffer& b = buffer_of(buffer);
  for (int r = 0; r < size_; ++r) wait_for_flag(arrived(b, r), gather);
}

void NodeAllGather::release(const torch::Tensor& buffer) {
  const Buffer& b = buffer_of(buffer);
  publish_flag(released(b, rank_), b.gathers);
}

}  // namespace ddpt
