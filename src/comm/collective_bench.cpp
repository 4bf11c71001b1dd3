#include "comm/collective_bench.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>

#include "util/error.hpp"

namespace ddpt {
namespace {

constexpr int64_t kValueBytes = sizeof(float);

// `elements` float32 values on comm.device(): from the backend, as training's gradient buckets
// (possibly in node-shared memory), or plain.
torch::Tensor make_buffer(Communicator& comm, bool backend_buffers, int64_t elements) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(comm.device());
  return backend_buffers ? comm.allocate_buffer(elements, options)
                         : torch::empty({elements}, options);
}

std::shared_ptr<Work> start_call(Communicator& comm, CollectiveOp op, torch::Tensor& buffer,
                                 torch::Tensor& output) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return comm.all_reduce_async(buffer, ReduceOp::kAvg);
    case CollectiveOp::kReduceScatter:
      return comm.reduce_scatter_async(buffer, output);
    case CollectiveOp::kAllGather:
      return comm.all_gather_in_place_async(buffer);
  }
  throw Error("bench comm: unknown collective", ExitCode::kInternal, Raised::kThisRank);
}

// Back-to-back calls as a training step issues its buckets; the last wait (and, on a GPU, the
// stream) tells when all of them are done. A buffer of the backend's is summed once at a time
// (a node-shared buffer holds one sum in flight, as a bucket does in a step).
void run_calls(Communicator& comm, CollectiveOp op, torch::Tensor& buffer, torch::Tensor& output,
               int calls, bool one_at_a_time) {
  std::vector<std::shared_ptr<Work>> works;
  works.reserve(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    works.push_back(start_call(comm, op, buffer, output));
    if (one_at_a_time) works.back()->wait();
  }
  for (const auto& work : works) work->wait();
  if (comm.device().is_cuda()) torch::cuda::synchronize();
}

// The slowest rank's figure: the job moves at its pace.
double slowest(Communicator& comm, double seconds) {
  const torch::Tensor mine =
      torch::tensor({seconds}, torch::TensorOptions().dtype(torch::kDouble).device(comm.device()));
  return comm.all_gather(mine).max().item<double>();
}

// One call on values whose result is known on every rank: rank r contributes r + 1 (and, for
// reduce_scatter, r + 1 + b in block b).
// The buffer is made as the timed one was (backend_buffers), so that the path timed is the path
// checked.
void check_result(Communicator& comm, CollectiveOp op, int64_t elements, bool backend_buffers) {
  const int n = comm.size();
  const int r = comm.rank();
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(comm.device());
  const int64_t block = elements / n;
  torch::Tensor result = make_buffer(comm, backend_buffers, elements);
  torch::Tensor expected;
  switch (op) {
    case CollectiveOp::kAllReduce: {
      result.fill_(r + 1.0);
      comm.all_reduce(result, ReduceOp::kAvg);
      expected = torch::full({elements}, (n + 1) / 2.0, options);
      break;
    }
    case CollectiveOp::kReduceScatter: {
      const torch::Tensor input = result;  // the buffer; the output is this rank's block of it
      input.copy_(torch::arange(n, options).repeat_interleave(block) + (r + 1.0));
      result = torch::empty({block}, options);
      comm.reduce_scatter_async(input, result)->wait();
      expected = torch::full({block}, n * (n + 1) / 2.0 + static_cast<double>(n) * r, options);
      break;
    }
    case CollectiveOp::kAllGather: {
      result.zero_();
      result.narrow(0, r * block, block).fill_(r + 1.0);
      comm.all_gather_in_place_async(result)->wait();
      expected = (torch::arange(n, options) + 1.0).repeat_interleave(block);
      break;
    }
  }
  if (!torch::allclose(result, expected)) {
    const int64_t first = (result != expected).nonzero()[0].item<int64_t>();
    throw Error(fmt::format("bench comm: {} of {} values gave wrong results on rank {}: value {} "
                            "is {}, expected {}",
                            collective_name(op), elements, r, first, result[first].item<float>(),
                            expected[first].item<float>()),
                ExitCode::kInternal, Raised::kThisRank);
  }
}

}  // namespace

const char* collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllGather:
      return "all_gather";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective(const std::string& name) {
  for (const CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
    if (name == collective_name(op)) return op;
  }
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  return op == CollectiveOp::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

std::vector<int64_t> bench_sizes(const CollectiveBenchOptions& options, CollectiveOp op,
                                 int ranks) {
  const int64_t multiple = op == CollectiveOp::kAllReduce ? 1 : ranks;
  std::vector<int64_t> sizes;
  for (int64_t bytes = options.min_bytes; bytes <= options.max_bytes;) {
    const int64_t elements = bytes / kValueBytes / multiple * multiple;
    const int64_t rounded = elements * kValueBytes;
    if (elements > 0 && (sizes.empty() || sizes.back() != rounded)) sizes.push_back(rounded);
    if (bytes > options.max_bytes / options.step_factor) break;
    bytes *= options.step_factor;
  }
  return sizes;
}

std::vector<CollectiveTiming> time_collectives(
    Communicator& comm, const CollectiveBenchOptions& options,
    const std::function<void(const CollectiveTiming&)>& report) {
  using Seconds = std::chrono::duration<double>;
  std::vector<CollectiveTiming> timings;
  const auto values = torch::TensorOptions().dtype(torch::kFloat).device(comm.device());
  for (const CollectiveOp op : options.ops) {
    for (const int64_t bytes : bench_sizes(options, op, comm.size())) {
      const int64_t elements = bytes / kValueBytes;
      torch::Tensor buffer = make_buffer(comm, options.backend_buffers, elements);
      buffer.copy_(torch::randn({elements}, values));
      torch::Tensor output = op == CollectiveOp::kReduceScatter
                                 ? torch::empty({elements / comm.size()}, values)
                                 : torch::Tensor();
      run_calls(comm, op, buffer, output, options.warmup, options.backend_buffers);
      comm.barrier();  // every rank starts the timed calls together
      const auto start = std::chrono::steady_clock::now();
      run_calls(comm, op, buffer, output, options.iterations, options.backend_buffers);
      const double mine = Seconds(std::chrono::steady_clock::now() - start).count();
      CollectiveTiming t;
      t.op = op;
      t.bytes = bytes;
      t.elements = elements;
      t.seconds = slowest(comm, mine) / options.iterations;
      t.algbw = static_cast<double>(bytes) / t.seconds;
      t.busbw = t.algbw * bus_bandwidth_factor(op, comm.size());
      t.shared_memory = in_shared_memory(comm, buffer);
      buffer = torch::Tensor();  // a node-shared buffer's segment goes before the check's comes
      check_result(comm, op, elements, options.backend_buffers);
      if (report) report(t);
      timings.push_back(t);
    }
  }
  return timings;
}

}  // namespace ddpt
