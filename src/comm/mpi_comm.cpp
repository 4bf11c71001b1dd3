#include "comm/mpi_comm.hpp"

#include <fmt/format.h>

#include <atomic>
#include <climits>
#include <exception>
#include <functional>
#include <string_view>
#include <utility>

#include "comm/mpi_half_sum.hpp"
#include "util/check.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Backends as flight records name them.
constexpr const char* kMpi = "MPI";
constexpr const char* kSharedMemory = "MPI shared memory";

MPI_Datatype mpi_type_of(const torch::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case torch::kFloat:
      return MPI_FLOAT;
    case torch::kDouble:
      return MPI_DOUBLE;
    case torch::kLong:
      return MPI_INT64_T;
    case torch::kInt:
      return MPI_INT32_T;
    case torch::kByte:
      return MPI_UINT8_T;
    case torch::kBFloat16:
    case torch::kHalf:
      return half_sum(tensor.scalar_type()).type;
    default:
      throw Error(
          std::string("MpiComm: unsupported tensor dtype ") + c10::toString(tensor.scalar_type()),
          ExitCode::kInternal, Raised::kThisRank);
  }
}

// MPI_SUM, or our own sum for the 16-bit float types MPI lacks.
MPI_Op sum_op_of(const torch::Tensor& tensor) {
  const bool half =
      tensor.scalar_type() == torch::kBFloat16 || tensor.scalar_type() == torch::kHalf;
  return half ? half_sum(tensor.scalar_type()).sum : MPI_SUM;
}

int checked_count(const torch::Tensor& tensor) {
  if (tensor.numel() > INT_MAX) {
    throw Error("MpiComm: tensor of " + std::to_string(tensor.numel()) +
                    " elements exceeds MPI's int count",
                ExitCode::kInternal, Raised::kThisRank);
  }
  return static_cast<int>(tensor.numel());
}

void require_host_contiguous(const torch::Tensor& tensor, const char* what) {
  if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
    throw Error(std::string("MpiComm::") + what + " needs a contiguous CPU tensor",
                ExitCode::kInternal, Raised::kThisRank);
  }
}

class MpiWork final : public Work {
 public:
  explicit MpiWork(std::future<void> done, std::shared_ptr<Clock::time_point> started)
      : done_(std::move(done)), started_(std::move(started)) {}
  void wait() override {
    if (done_.valid()) done_.get();  // rethrows an MPI error from the communication thread
  }
  Clock::time_point started_at() const override { return *started_; }

 private:
  std::future<void> done_;
  std::shared_ptr<Clock::time_point> started_;  // written by the communication thread
};

// A sum of a node-shared buffer (comm/node_all_reduce.hpp): this rank arrived when it was
// launched; the helper thread sums chunks as soon as it gets cycles, and wait() sums what is left
// on the waiting thread, then runs `then` (the average's division, the block's copy-out, the
// squares).
class NodeSumWork final : public Work {
 public:
  struct Started {
    std::atomic<bool> set{false};
    Clock::time_point at;
    void mark() {
      if (!set.exchange(true)) at = Clock::now();
    }
  };
  using Then = std::function<void(const NodeSum&)>;
  NodeSumWork(NodeAllReduce& node, NodeSum sum, std::future<void> helper,
              std::shared_ptr<Started> started, Then then)
      : node_(node),
        sum_(sum),
        helper_(std::move(helper)),
        started_(std::move(started)),
        then_(std::move(then)) {}
  void wait() override {
    if (!helper_.valid()) return;  // waited before
    started_->mark();
    node_.finish(sum_);
    helper_.get();  // rethrows the helper's error; it ends once every chunk is summed
    if (then_) then_(sum_);
  }
  Clock::time_point started_at() const override { return started_->at; }

 private:
  NodeAllReduce& node_;
  NodeSum sum_;
  std::future<void> helper_;
  std::shared_ptr<Started> started_;
  Then then_;
};

// A gather into a node-shared buffer (comm/node_all_gather.hpp): this rank's block went in when it
// was launched; wait() waits, on the waiting thread, until every rank's has.
class NodeGatherWork final : public Work {
 public:
  NodeGatherWork(NodeAllGather& gathers, torch::Tensor buffer, uint32_t gather, std::string name,
                 uint64_t flight, Watchdog* watchdog, FlightRecorder* recorder,
                 Clock::time_point started)
      : gathers_(gathers),
        buffer_(std::move(buffer)),
        gather_(gather),
        name_(std::move(name)),
        flight_(flight),
        watchdog_(watchdog),
        recorder_(recorder),
        started_(started) {}
  void wait() override {
    if (done_) return;
    {
      const Watchdog::Scope watched = watch(watchdog_, name_);
      gathers_.finish(buffer_, gather_);
    }
    if (recorder_) recorder_->completed(flight_);
    done_ = true;
  }
  Clock::time_point started_at() const override { return started_; }

 private:
  NodeAllGather& gathers_;
  torch::Tensor buffer_;
  uint32_t gather_;
  std::string name_;
  uint64_t flight_;
  Watchdog* watchdog_;
  FlightRecorder* recorder_;
  Clock::time_point started_;
  bool done_ = false;
};

// The reduce-scatter leaves this rank's block of the sum in its copy of `input`: into `output`
// unless `output` is that block.
NodeSumWork::Then copy_out_of_block(NodeAllReduce& node, const torch::Tensor& input,
                                    const torch::Tensor& output) {
  const torch::Tensor block = node.own_block(input);
  if (output.numel() != block.numel() || output.scalar_type() != block.scalar_type() ||
      !output.is_contiguous()) {
    throw Error("MpiComm::reduce_scatter: the output must be contiguous and hold one block",
                ExitCode::kInternal, Raised::kThisRank);
  }
  if (output.data_ptr() == block.data_ptr()) return [](const NodeSum&) {};
  return [block, output](const NodeSum&) mutable { output.copy_(block); };
}

}  // namespace

MpiComm::MpiComm(MPI_Comm comm, Watchdog* watchdog, FaultInjector& faults)
    : watchdog_(watchdog), faults_(faults) {
  DDPT_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
  segments_ = std::make_unique<NodeSegments>(comm_.get());
  node_ = std::make_unique<NodeAllReduce>(*segments_);
  gathers_ = std::make_unique<NodeAllGather>(*segments_);
}

MpiComm::~MpiComm() {
  // Unwinding from an error: peers may never join a queued collective; do not wait for them,
  // and leave the communicator to MPI_Abort (freeing it is itself collective).
  if (std::uncaught_exceptions() > 0) {
    helper_.cancel();  // a helper still summing only waits for its peers: left detached
    if (!thread_.cancel()) comm_.release();
  }
}

std::shared_ptr<Work> MpiComm::submit_collective(Label label, std::function<void()> collective) {
  auto started = std::make_shared<Clock::time_point>();
  auto done = thread_.submit(
      [this, started, label = std::move(label), collective = std::move(collective)]() mutable {
        *started = Clock::now();
        FlightRecorder* recorder = flight();
        if (recorder) recorder->started(label.flight);
        const Watchdog::Scope watched = watch(watchdog_, std::move(label.name));
        collective();
        if (recorder) recorder->completed(label.flight);
      });
  return std::make_shared<MpiWork>(std::move(done), std::move(started));
}

std::shared_ptr<Work> MpiComm::submit_node_sum(Label label, const torch::Tensor& tensor,
                                               NodeSumKind kind,
                                               std::function<void(const NodeSum&)> then) {
  // Arrived here, on the caller's thread, so that arrivals follow every rank's program order.
  const NodeSum sum = node_->arrive(tensor, kind);
  auto started = std::make_shared<NodeSumWork::Started>();
  auto helper = helper_.submit([this, sum, started, label = std::move(label)]() mutable {
    started->mark();
    FlightRecorder* recorder = flight();
    if (recorder) recorder->started(label.flight);
    const Watchdog::Scope watched = watch(watchdog_, std::move(label.name));
    node_->finish(sum);  // stays until every chunk is summed: watched while the sum lasts
    if (recorder) recorder->completed(label.flight);
  });
  return std::make_shared<NodeSumWork>(*node_, sum, std::move(helper), std::move(started),
                                       std::move(then));
}

std::shared_ptr<Work> MpiComm::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  require_host_contiguous(tensor, "all_reduce");
  if (op == ReduceOp::kAvg && !tensor.is_floating_point()) {
    throw Error("MpiComm::all_reduce: average needs a floating-point tensor", ExitCode::kInternal,
                Raised::kThisRank);
  }
  if (faults_.leave_out_all_reduce()) {
    return std::make_shared<MpiWork>(std::future<void>(), std::make_shared<Clock::time_point>());
  }
  if (node_->owns(tensor)) {
    NodeSumWork::Then then;
    if (op == ReduceOp::kAvg) then = [this, tensor](const NodeSum&) mutable { tensor.div_(size_); };
    return submit_node_sum(next_collective("all_reduce", kSharedMemory, tensor), tensor,
                           NodeSumKind::kAllReduce, std::move(then));
  }
  const MPI_Datatype type = mpi_type_of(tensor);
  const MPI_Op sum = sum_op_of(tensor);
  const int count = checked_count(tensor);
  // A blocking all-reduce on the communication thread: Open MPI's tuned shared-memory and
  // network algorithms run at full speed, where MPI_Iallreduce (libnbc) progresses only inside
  // MPI_Test calls and left several times more wait exposed in each step of the scaling MLP
  // (benchmarks.md, "Choices measured": blocking all-reduce).
  return submit_collective(next_collective("all_reduce", kMpi, tensor), [this, tensor, count, type,
                                                                         sum, op]() mutable {
    if (size_ > 1) {
      DDPT_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, tensor.data_ptr(), count, type, sum, comm_.get()));
    }
    if (op == ReduceOp::kAvg && size_ > 1) tensor.div_(size_);
  });
}

namespace {

// Open MPI's reduce-scatter algorithms take temporaries of about twice what they are given: for a
// whole bucket, or a large parameter's gradient that ZeRO-2 reduces as it is, twice that much
// memory at the moment ZeRO-2 is meant to save it. So a large input is reduced this much at a time.
constexpr int64_t kReduceScatterChunkBytes = int64_t{8} << 20;

// MPI_Reduce_scatter_block of `input` (`size` blocks of output.numel()) into `output`. Past the
// chunk size, each round packs the same run of every rank's block side by side and reduces that.
void reduce_scatter_in_chunks(const torch::Tensor& input, const torch::Tensor& output, int size,
                              MPI_Datatype type, MPI_Op sum, MPI_Comm comm) {
  const int64_t block = output.numel();
  const int64_t element = static_cast<int64_t>(output.element_size());
  const int64_t chunk = std::max<int64_t>(1, kReduceScatterChunkBytes / (size * element));
  if (block <= chunk) {
    DDPT_CHECK_MPI(MPI_Reduce_scatter_block(input.data_ptr(), output.data_ptr(),
                                            static_cast<int>(block), type, sum, comm));
    return;
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor blocks = input.view({size, block});
  torch::Tensor packed = torch::empty({size * chunk}, input.options());
  for (int64_t first = 0; first < block; first += chunk) {
    const int64_t run = std::min(chunk, block - first);
    packed.narrow(0, 0, size * run).view({size, run}).copy_(blocks.narrow(1, first, run));
    DDPT_CHECK_MPI(MPI_Reduce_scatter_block(packed.data_ptr(),
                                            static_cast<char*>(output.data_ptr()) + first * element,
                                            static_cast<int>(run), type, sum, comm));
  }
}

}  // namespace

std::shared_ptr<Work> MpiComm::reduce_scatter_async(torch::Tensor input, torch::Tensor output) {
  require_host_contiguous(input, "reduce_scatter");
  require_host_contiguous(output, "reduce_scatter");
  if (input.numel() != output.numel() * size_ || input.scalar_type() != output.scalar_type()) {
    throw Error(
        "MpiComm::reduce_scatter: the input must hold world size x the output's elements, "
        "of the same dtype",
        ExitCode::kInternal, Raised::kThisRank);
  }
  if (node_->owns(input)) {
    return submit_node_sum(next_collective("reduce_scatter", kSharedMemory, input), input,
                           NodeSumKind::kReduceScatter, copy_out_of_block(*node_, input, output));
  }
  const MPI_Datatype type = mpi_type_of(output);
  const MPI_Op sum = sum_op_of(output);
  checked_count(output);  // a block MPI can count
  return submit_collective(next_collective("reduce_scatter", kMpi, input),
                           [this, input, output, type, sum]() mutable {
                             if (size_ == 1) {
                               output.copy_(input);
                               return;
                             }
                             reduce_scatter_in_chunks(input, output, size_, type, sum, comm_.get());
                           });
}

std::shared_ptr<Work> MpiComm::reduce_scatter_with_squares_async(torch::Tensor input,
                                                                 torch::Tensor output,
                                                                 double* squares) {
  if (!node_->owns(input)) {
    throw Error("mpi: reduce_scatter_with_squares_async needs a buffer summed in shared memory",
                ExitCode::kInternal, Raised::kThisRank);
  }
  return submit_node_sum(
      next_collective("reduce_scatter", kSharedMemory, input), input, NodeSumKind::kReduceScatter,
      [this, copy_out = copy_out_of_block(*node_, input, output), squares](const NodeSum& sum) {
        copy_out(sum);
        *squares = node_->squares(sum);
      });
}

std::shared_ptr<Work> MpiComm::all_gather_in_place_async(torch::Tensor tensor) {
  require_host_contiguous(tensor, "all_gather_in_place");
  if (tensor.numel() % size_ != 0) {
    throw Error("MpiComm::all_gather_in_place: the tensor's elements must divide by the world size",
                ExitCode::kInternal, Raised::kThisRank);
  }
  const MPI_Datatype type = mpi_type_of(tensor);
  const int count = checked_count(tensor) / size_;
  return submit_collective(
      next_collective("all_gather", kMpi, tensor), [this, tensor, count, type]() mutable {
        if (size_ == 1) return;
        DDPT_CHECK_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, tensor.data_ptr(), count,
                                     type, comm_.get()));
      });
}

void MpiComm::broadcast(torch::Tensor tensor, int root) {
  require_host_contiguous(tensor, "broadcast");
  const MPI_Datatype type = mpi_type_of(tensor);
  const int count = checked_count(tensor);
  submit_collective(next_collective("broadcast", kMpi, tensor), [&] {
    DDPT_CHECK_MPI(MPI_Bcast(tensor.data_ptr(), count, type, root, comm_.get()));
  })->wait();
}

torch::Tensor MpiComm::all_gather(const torch::Tensor& tensor) {
  const torch::Tensor input = tensor.contiguous();
  require_host_contiguous(input, "all_gather");
  std::vector<int64_t> shape{size_};
  shape.insert(shape.end(), input.sizes().begin(), input.sizes().end());
  torch::Tensor output = torch::empty(shape, input.options());
  const MPI_Datatype type = mpi_type_of(input);
  const int count = checked_count(input);
  submit_collective(next_collective("all_gather", kMpi, input), [&] {
    DDPT_CHECK_MPI(
        MPI_Allgather(input.data_ptr(), count, type, output.data_ptr(), count, type, comm_.get()));
  })->wait();
  return output;
}

void MpiComm::barrier() {
  submit_collective(next_collective("barrier"), [&] {
    DDPT_CHECK_MPI(MPI_Barrier(comm_.get()));
  })->wait();
}

torch::Tensor MpiComm::allocate_on_node(const torch::TensorOptions& options,
                                        const std::function<torch::Tensor()>& allocate) {
  torch::Tensor memory;
  if (size_ > 1 && options.device().is_cpu()) {
    run_blocking(
        [&, name = fmt::format("MPI shared-memory allocation #{}", ++collectives_)]() mutable {
          const Watchdog::Scope watched = watch(watchdog_, std::move(name));
          memory = allocate();
        });
  }
  return memory;
}

torch::Tensor MpiComm::allocate_buffer(int64_t numel, const torch::TensorOptions& options) {
  const torch::Tensor shared = allocate_on_node(
      options, [&] { return node_->allocate(numel, options.dtype().toScalarType()); });
  return shared.defined() ? shared : Communicator::allocate_buffer(numel, options);
}

bool MpiComm::in_shared_memory(const torch::Tensor& buffer) const {
  return node_->owns(buffer);
}

torch::Tensor MpiComm::allocate_common(int64_t numel, const torch::TensorOptions& options,
                                       const std::string& subject) {
  return allocate_on_node(options, [&] {
    return node_->allocate_common(numel, options.dtype().toScalarType(), subject);
  });
}

torch::Tensor MpiComm::allocate_gather_buffer(int64_t numel, const torch::TensorOptions& options,
                                              const std::string& subject) {
  return allocate_on_node(
      options, [&] { return gathers_->allocate(numel, options.dtype().toScalarType(), subject); });
}

std::shared_ptr<Work> MpiComm::all_gather_into_shared_async(const torch::Tensor& block,
                                                            torch::Tensor buffer) {
  Label label = next_collective("all_gather", kSharedMemory, buffer);
  FlightRecorder* recorder = flight();
  const Clock::time_point started = Clock::now();
  if (recorder) recorder->started(label.flight);
  uint32_t gather = 0;
  {
    // Waits for every rank's release of the previous gather: watched as the gather.
    const Watchdog::Scope watched = watch(watchdog_, label.name);
    gather = gathers_->arrive(block, buffer);
  }
  return std::make_shared<NodeGatherWork>(*gathers_, std::move(buffer), gather,
                                          std::move(label.name), label.flight, watchdog_, recorder,
                                          started);
}

void MpiComm::done_reading(const torch::Tensor& buffer) {
  gathers_->release(buffer);
}

MpiComm::Label MpiComm::next_collective(const char* operation, const char* backend,
                                        const torch::Tensor& tensor) {
  ++collectives_;
  if (watchdog_ == nullptr || size_ == 1) return {};  // nobody reads it: keep the step lean
  Label label;
  const char* dtype = c10::toString(tensor.scalar_type());
  const bool shared = std::string_view(backend) == kSharedMemory;
  label.name = fmt::format("MPI {}{} #{} ({} x {})", shared ? "shared-memory " : "", operation,
                           collectives_, tensor.numel(), dtype);
  if (FlightRecorder* recorder = flight()) {
    label.flight = recorder->queued(FlightRecorder::kTrainingStream, operation,
                                    tensor.numel() * tensor.element_size(), dtype, backend);
  }
  return label;
}

MpiComm::Label MpiComm::next_collective(const char* operation) {
  ++collectives_;
  if (watchdog_ == nullptr || size_ == 1) return {};
  Label label;
  label.name = fmt::format("MPI {} #{}", operation, collectives_);
  if (FlightRecorder* recorder = flight()) {
    label.flight = recorder->queued(FlightRecorder::kTrainingStream, operation, 0, "", kMpi);
  }
  return label;
}

void MpiComm::run_blocking(std::function<void()> job) {
  thread_.submit(std::move(job)).get();
}

}  // namespace ddpt
