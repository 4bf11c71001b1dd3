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
static_assert(8 + sizeof(double) <= kFlagBytes);  // a block's sum of squares beside its done flag

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

// Block [begin, end) summed into every copy (all-reduce) or into `output` only (reduce-scatter).
template <class T>
void sum_into(const std::vector<char*>& copies, int64_t begin, int64_t end, void* output,
              double* squares) {
  std::vector<const T*> from;
  for (char* copy : copies) from.push_back(reinterpret_cast<const T*>(copy) + begin);
  std::vector<T*> into;
  if (output != nullptr) {
    into.push_back(static_cast<T*>(output));
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
  const size_t element = c10::elementSize(dtype);
  const size_t header = round_up(2 * kFlagBytes * static_cast<size_t>(size_), kPage);
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
                                                   2 * kFlagBytes * static_cast<size_t>(rank));
}

std::atomic<uint32_t>& NodeAllReduce::done(const Buffer& buffer, int rank) const {
  return *reinterpret_cast<std::atomic<uint32_t>*>(
      buffer.memory->data() + 2 * kFlagBytes * static_cast<size_t>(rank) + kFlagBytes);
}

double& NodeAllReduce::block_squares(const Buffer& buffer, int rank) const {
  // In the done flag's cache line, after the flag.
  return *reinterpret_cast<double*>(reinterpret_cast<char*>(&done(buffer, rank)) + 8);
}

void NodeAllReduce::wait_for_arrivals(const Buffer& buffer, uint32_t sequence) {
  publish(arrived(buffer, rank_), sequence);
  for (int r = 0; r < size_; ++r) wait_until(arrived(buffer, r), sequence);
}

void NodeAllReduce::wait_for_readers(const Buffer& buffer, uint32_t sequence) {
  publish(done(buffer, rank_), sequence);
  for (int r = 0; r < size_; ++r) wait_until(done(buffer, r), sequence);
}

void NodeAllReduce::sum(const torch::Tensor& tensor) {
  Buffer& buffer = buffers_.at(tensor.data_ptr());
  const uint32_t sequence = ++buffer.sequence;
  // 1. Every rank's copy holds its gradients: none is still being written by its own backward.
  wait_for_arrivals(buffer, sequence);
  // 2. This rank's block, summed and written into every copy.
  const int64_t begin = buffer.numel * rank_ / size_;
  const int64_t end = buffer.numel * (rank_ + 1) / size_;
  if (buffer.dtype == torch::kFloat) {
    sum_into<float>(buffer.copies, begin, end, nullptr, nullptr);
  } else {
    sum_into<double>(buffer.copies, begin, end, nullptr, nullptr);
  }
  // 3. Every block is in: this rank's copy is the sum, and no rank writes into it any more.
  wait_for_readers(buffer, sequence);
}

double NodeAllReduce::reduce_scatter(const torch::Tensor& tensor, const torch::Tensor& output) {
  Buffer& buffer = buffers_.at(tensor.data_ptr());
  const int64_t block = buffer.numel / size_;
  if (buffer.numel % size_ != 0 || output.numel() != block ||
      output.scalar_type() != buffer.dtype || !output.is_contiguous()) {
    throw Error("NodeAllReduce::reduce_scatter: the output must be contiguous and hold one block",
                ExitCode::kInternal, Raised::kThisRank);
  }
  const uint32_t sequence = ++buffer.sequence;
  wait_for_arrivals(buffer, sequence);
  double squares = 0;
  if (buffer.dtype == torch::kFloat) {
    sum_into<float>(buffer.copies, block * rank_, block * (rank_ + 1), output.data_ptr(), &squares);
  } else {
    sum_into<double>(buffer.copies, block * rank_, block * (rank_ + 1), output.data_ptr(),
                     &squares);
  }
  // This rank's sum of squares rides on its done flag (published with release, read after the
  // acquire that sees the flag). Only the output was written; the barrier also keeps every rank
  // from writing into its copy (the next backward) while another still reads its block of it.
  block_squares(buffer, rank_) = squares;
  wait_for_readers(buffer, sequence);
  double total = 0;  // in rank order: the same bits on every rank
  for (int r = 0; r < size_; ++r) total += block_squares(buffer, r);
  return total;
}

}  // namespace ddpt
