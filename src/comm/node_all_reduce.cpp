#include "comm/node_all_reduce.hpp"

#include <algorithm>

#include "comm/copy_sum.hpp"
#include "comm/shared_flag.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Elements [begin, end) summed across the copies, into every copy (`owner` < 0) or into copy
// `owner` only.
template <class T>
void sum_range(const std::vector<char*>& copies, int64_t begin, int64_t end, int owner,
               double* squares) {
  std::vector<const T*> from;
  for (char* copy : copies) from.push_back(reinterpret_cast<const T*>(copy) + begin);
  std::vector<T*> into;
  if (owner >= 0) {
    into.push_back(reinterpret_cast<T*>(copies[static_cast<size_t>(owner)]) + begin);
  } else {
    for (char* copy : copies) into.push_back(reinterpret_cast<T*>(copy) + begin);
  }
  sum_copies<T>(from, end - begin, into, squares);
}

}  // namespace

NodeAllReduce::NodeAllReduce(NodeSegments& segments)
    : segments_(segments), rank_(segments.rank()), size_(segments.size()) {}

torch::Tensor NodeAllReduce::allocate(int64_t numel, torch::ScalarType dtype) {
  if (size_ == 1 || (dtype != torch::kFloat && dtype != torch::kDouble) || !segments_.one_node()) {
    return {};
  }
  // Chunks block by block (a chunk never spans two ranks' blocks), the blocks as the sums cut
  // them: numel x r / size; for a reduce-scatter, whose length divides by size, block x r.
  std::vector<Chunk> chunks;
  for (int r = 0; r < size_; ++r) {
    const int64_t end = numel * (r + 1) / size_;
    for (int64_t begin = numel * r / size_; begin < end; begin += kChunkElements) {
      chunks.push_back({begin, std::min(begin + kChunkElements, end), r});
    }
  }
  const size_t element = c10::elementSize(dtype);
  const size_t header =
      whole_pages(kFlagBytes * (static_cast<size_t>(size_) + 2) + sizeof(double) * chunks.size());
  const size_t slot = whole_pages(std::max<size_t>(1, numel * element));
  const size_t bytes = header + slot * static_cast<size_t>(size_);
  const std::shared_ptr<SharedMemory> memory =
      segments_.map(bytes, "gradient buckets", "MPI_Allreduce sums them");
  if (!memory) return {};

  Buffer buffer;
  buffer.memory = memory;
  for (int r = 0; r < size_; ++r) buffer.copies.push_back(memory->data() + header + slot * r);
  buffer.numel = numel;
  buffer.dtype = dtype;
  buffer.chunks = std::move(chunks);
  char* mine = buffer.copies[static_cast<size_t>(rank_)];
  buffers_.emplace(mine, std::move(buffer));
  // The tensor keeps the mapping: gradients (views of buckets) may outlive this object.
  return torch::from_blob(
      mine, {numel}, [memory](void*) {}, torch::TensorOptions(dtype));
}

torch::Tensor NodeAllReduce::allocate_common(int64_t numel, torch::ScalarType dtype,
                                             const std::string& subject) {
  const size_t bytes = whole_pages(std::max<size_t>(1, numel * c10::elementSize(dtype)));
  const std::shared_ptr<SharedMemory> memory =
      segments_.map(bytes, subject, "each rank keeps its own copy");
  if (!memory) return {};
  return torch::from_blob(
      memory->data(), {numel}, [memory](void*) {}, torch::TensorOptions(dtype));
}

bool NodeAllReduce::owns(const torch::Tensor& tensor) const {
  const auto found = buffers_.find(tensor.data_ptr());
  return found != buffers_.end() && tensor.numel() == found->second.numel &&
         tensor.scalar_type() == found->second.dtype && tensor.is_contiguous();
}

std::atomic<uint32_t>& NodeAllReduce::arrived(const Buffer& buffer, int rank) const {
  return *reinterpret_cast<std::atomic<uint32_t>*>(buffer.memory->data() +
                                                   kFlagBytes * static_cast<size_t>(rank));
}

std::atomic<uint32_t>& NodeAllReduce::chunks_taken(const Buffer& buffer) const {
  return *reinterpret_cast<std::atomic<uint32_t>*>(buffer.memory->data() +
                                                   kFlagBytes * static_cast<size_t>(size_));
}

std::atomic<uint32_t>& NodeAllReduce::chunks_summed(const Buffer& buffer) const {
  return *reinterpret_cast<std::atomic<uint32_t>*>(buffer.memory->data() +
                                                   kFlagBytes * static_cast<size_t>(size_ + 1));
}

double* NodeAllReduce::chunk_squares(const Buffer& buffer) const {
  return reinterpret_cast<double*>(buffer.memory->data() +
                                   kFlagBytes * static_cast<size_t>(size_ + 2));
}

NodeSum NodeAllReduce::arrive(const torch::Tensor& tensor, NodeSumKind kind) {
  Buffer& buffer = buffers_.at(tensor.data_ptr());
  if (kind == NodeSumKind::kReduceScatter && buffer.numel % size_ != 0) {
    throw Error("NodeAllReduce: a reduce-scatter needs a length that divides by the world size",
                ExitCode::kInternal, Raised::kThisRank);
  }
  const NodeSum sum{&buffer, ++buffer.sequence, kind};
  publish_flag(arrived(buffer, rank_), sum.sequence);
  return sum;
}

void NodeAllReduce::sum_chunk(const Buffer& buffer, size_t chunk, NodeSumKind kind) const {
  const Chunk& c = buffer.chunks[chunk];
  const bool scatter = kind == NodeSumKind::kReduceScatter;
  double* squares = scatter ? chunk_squares(buffer) + chunk : nullptr;
  const int owner = scatter ? c.owner : -1;
  if (buffer.dtype == torch::kFloat) {
    sum_range<float>(buffer.copies, c.begin, c.end, owner, squares);
  } else {
    sum_range<double>(buffer.copies, c.begin, c.end, owner, squares);
  }
}

// Chunk tickets count on over the buffer's sums: sum s takes tickets [(s - 1) K, s K) of its K
// chunks (modulo 2^32). No thread takes a ticket of sum s + 1 before every rank has arrived at it,
// which each rank does only after finish(s): a late helper of sum s finds its tickets gone.
void NodeAllReduce::help(const NodeSum& sum) {
  const Buffer& buffer = buffer_of(sum);
  for (int r = 0; r < size_; ++r) wait_for_flag(arrived(buffer, r), sum.sequence);
  const auto chunks = static_cast<uint32_t>(buffer.chunks.size());
  const uint32_t first = (sum.sequence - 1) * chunks;
  const uint32_t end = first + chunks;
  std::atomic<uint32_t>& taken = chunks_taken(buffer);
  std::atomic<uint32_t>& summed = chunks_summed(buffer);
  uint32_t ticket = taken.load(std::memory_order_relaxed);
  while (!flag_reached(ticket, end)) {
    if (!taken.compare_exchange_weak(ticket, ticket + 1, std::memory_order_relaxed)) continue;
    sum_chunk(buffer, ticket - first, sum.kind);
    // Release: the chunk's values and squares are visible to whoever sees the count.
    if (summed.fetch_add(1, std::memory_order_acq_rel) + 1 == end) {
      wake_flag_waiters(summed);
    }
    ticket = taken.load(std::memory_order_relaxed);
  }
}

void NodeAllReduce::finish(const NodeSum& sum) {
  help(sum);
  const Buffer& buffer = buffer_of(sum);
  wait_for_flag(chunks_summed(buffer), sum.sequence * static_cast<uint32_t>(buffer.chunks.size()));
}

double NodeAllReduce::squares(const NodeSum& sum) const {
  const Buffer& buffer = buffer_of(sum);
  const double* each = chunk_squares(buffer);
  double total = 0;  // in chunk order: the same bits on every rank, whoever summed which chunk
  for (size_t c = 0; c < buffer.chunks.size(); ++c) total += each[c];
  return total;
}

torch::Tensor NodeAllReduce::own_block(const torch::Tensor& tensor) const {
  const int64_t block = tensor.numel() / size_;
  return tensor.narrow(0, block * rank_, block);
}

}  // namespace ddpt
