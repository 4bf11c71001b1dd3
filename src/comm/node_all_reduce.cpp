#include "comm/node_all_reduce.hpp"

#include <linux/futex.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>

#include "comm/copy_sum.hpp"
#include "util/check.hpp"

namespace ddpt {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kFlagBytes = 64;  // one cache line per flag, so ranks do not share lines
constexpr int kSpins = 256;        // polls before sleeping on a flag (a few microseconds)
static_assert(std::atomic<uint32_t>::is_always_lock_free);

size_t round_up(size_t bytes, size_t to) {
  return (bytes + to - 1) / to * to;
}

// Flags count sums modulo 2^32; a flag has reached `target` when it is at most 2^31 past it.
bool reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

long futex(std::atomic<uint32_t>& flag, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word lives in memory other processes map.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&flag), op, value, timeout, nullptr, 0);
}

// A hint to the core that this is a spin-wait loop.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void publish(std::atomic<uint32_t>& flag, uint32_t value) {
  flag.store(value, std::memory_order_release);
  futex(flag, FUTEX_WAKE, INT_MAX, nullptr);
}

void wait_until(std::atomic<uint32_t>& flag, uint32_t target) {
  for (int spin = 0; spin < kSpins; ++spin) {
    if (reached(flag.load(std::memory_order_acquire), target)) return;
    relax();
  }
  // Asleep until the flag changes; the timeout only bounds a missed wake-up.
  const timespec timeout{0, 50'000'000};
  for (;;) {
    const uint32_t seen = flag.load(std::memory_order_acquire);
    if (reached(seen, target)) return;
    futex(flag, FUTEX_WAIT, seen, &timeout);
  }
}

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

// A name no other segment on the node has now: rank 0's pid, a process-wide count and the time.
std::string segment_name(int64_t pid, int64_t count, int64_t nanoseconds) {
  return "/ddptrain-" + std::to_string(pid) + "-" + std::to_string(count) + "-" +
         std::to_string(nanoseconds);
}

}  // namespace

NodeAllReduce::NodeAllReduce(MPI_Comm comm) : comm_(comm) {
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_, &size_));
}

bool NodeAllReduce::one_node() {
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

std::shared_ptr<SharedMemory> NodeAllReduce::map_segment(size_t bytes, const std::string& subject,
                                                         const std::string& fallback) {
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
    // Refused once (a full /dev/shm): every later buffer goes to MPI too, with one warning.
    if (!why.empty()) spdlog::warn("{} not in shared memory ({}): {}", subject, why, fallback);
    one_node_ = 0;
    return nullptr;
  }
  return memory;
}

torch::Tensor NodeAllReduce::allocate(int64_t numel, torch::ScalarType dtype) {
  if (size_ == 1 || (dtype != torch::kFloat && dtype != torch::kDouble) || !one_node()) return {};
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
  const size_t header = round_up(
      kFlagBytes * (static_cast<size_t>(size_) + 2) + sizeof(double) * chunks.size(), kPage);
  const size_t slot = round_up(std::max<size_t>(1, numel * element), kPage);
  const size_t bytes = header + slot * static_cast<size_t>(size_);
  const std::shared_ptr<SharedMemory> memory =
      map_segment(bytes, "gradient buckets", "MPI_Allreduce sums them");
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
  if (size_ == 1 || !one_node()) return {};
  const size_t bytes = round_up(std::max<size_t>(1, numel * c10::elementSize(dtype)), kPage);
  const std::shared_ptr<SharedMemory> memory =
      map_segment(bytes, subject, "each rank keeps its own copy");
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
  publish(arrived(buffer, rank_), sum.sequence);
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
  for (int r = 0; r < size_; ++r) wait_until(arrived(buffer, r), sum.sequence);
  const auto chunks = static_cast<uint32_t>(buffer.chunks.size());
  const uint32_t first = (sum.sequence - 1) * chunks;
  const uint32_t end = first + chunks;
  std::atomic<uint32_t>& taken = chunks_taken(buffer);
  std::atomic<uint32_t>& summed = chunks_summed(buffer);
  uint32_t ticket = taken.load(std::memory_order_relaxed);
  while (!reached(ticket, end)) {
    if (!taken.compare_exchange_weak(ticket, ticket + 1, std::memory_order_relaxed)) continue;
    sum_chunk(buffer, ticket - first, sum.kind);
    // Release: the chunk's values and squares are visible to whoever sees the count.
    if (summed.fetch_add(1, std::memory_order_acq_rel) + 1 == end) {
      futex(summed, FUTEX_WAKE, INT_MAX, nullptr);
    }
    ticket = taken.load(std::memory_order_relaxed);
  }
}

void NodeAllReduce::finish(const NodeSum& sum) {
  help(sum);
  const Buffer& buffer = buffer_of(sum);
  wait_until(chunks_summed(buffer), sum.sequence * static_cast<uint32_t>(buffer.chunks.size()));
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
