#include "comm/nccl_comm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#ifdef DDPTRAIN_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include "comm/nccl_bootstrap.hpp"
#include "runtime/cuda_check.hpp"
#include "util/check.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"
#include "util/versions.hpp"

namespace ddpt {
namespace {

int rank_in(MPI_Comm comm) {
  int rank = 0;
  DDPT_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 1;
  DDPT_CHECK_MPI(MPI_Comm_size(comm, &size));
  return size;
}

ncclDataType_t nccl_type_of(const torch::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case torch::kFloat:
      return ncclFloat32;
    case torch::kDouble:
      return ncclFloat64;
    case torch::kHalf:
      return ncclFloat16;
#if DDPTRAIN_NCCL_HAS_AVG_AND_BF16
    case torch::kBFloat16:
      return ncclBfloat16;
#endif
    case torch::kLong:
      return ncclInt64;
    case torch::kInt:
      return ncclInt32;
    case torch::kByte:
    case torch::kBool:  // one byte each, 0 or 1: broadcast as bytes (bool buffers)
      return ncclUint8;
    case torch::kChar:
      return ncclInt8;
    default:
      throw Error(
          std::string("NcclComm: unsupported tensor dtype ") + c10::toString(tensor.scalar_type()),
          ExitCode::kInternal, Raised::kThisRank);
  }
}

ncclRedOp_t nccl_op_of(ReduceOp op) {
#if DDPTRAIN_NCCL_HAS_AVG_AND_BF16
  return op == ReduceOp::kAvg ? ncclAvg : ncclSum;
#else
  if (op == ReduceOp::kAvg)
    throw Error("NcclComm: average needs NCCL >= 2.10", ExitCode::kInternal, Raised::kThisRank);
  return ncclSum;
#endif
}

// Torch's current stream on `device`: where the tensors we reduce were produced.
cudaStream_t current_compute_stream(int device) {
#ifdef DDPTRAIN_TORCH_CUDA
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return cudaStreamLegacy;  // a LibTorch without CUDA makes no CUDA tensors of its own
#endif
}

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<CudaEvent> done, cudaStream_t compute,
           std::vector<torch::Tensor> keep_alive)
      : done_(std::move(done)),
        compute_(compute),
        tensors_(std::move(keep_alive)),
        started_(Clock::now()) {}
  void wait() override { done_->block(compute_); }
  Clock::time_point started_at() const override { return started_; }

 private:
  std::shared_ptr<CudaEvent> done_;  // shared with the watchdog, which polls it
  cudaStream_t compute_;
  std::vector<torch::Tensor> tensors_;  // the buffers stay allocated until the work is dropped
  Clock::time_point started_;
};

void require_device_contiguous(const torch::Tensor& tensor, int device, const char* what) {
  if (!tensor.is_cuda() || tensor.get_device() != device || !tensor.is_contiguous()) {
    throw Error(std::string("NcclComm::") + what +
                    " needs a contiguous tensor on cuda:" + std::to_string(device),
                ExitCode::kInternal, Raised::kThisRank);
  }
}

// The unique id's broadcast and ncclCommInitRank, under the watchdog: both wait for every peer,
// and one that died or hangs before it joins would keep this rank waiting forever.
NcclHandle join_watched(MPI_Comm mpi_comm, int size, int rank, Watchdog* watchdog) {
  const Watchdog::Scope scope = watch(watchdog, "NCCL communicator set-up (ncclCommInitRank)");
  const ncclUniqueId id = broadcast_nccl_unique_id(mpi_comm);
  return NcclHandle(size, id, rank);
}

// NCCL reports a failed peer or network on the communicator (ncclCommGetAsyncError) while this
// rank may wait on a stream that will never finish; PyTorch's ProcessGroupNCCL polls it from its
// watchdog likewise. The handle outlives the scope (member order in NcclComm).
Watchdog::Scope watch_async_error(Watchdog* watchdog, const NcclHandle& handle) {
  if (watchdog == nullptr) return {};
  return watchdog->watch_for_failure("NCCL communicator",
                                     [&handle] { return handle.async_error(); });
}

}  // namespace

int NcclComm::select_device(int device_index) {
  DDPT_CHECK_CUDA(cudaSetDevice(device_index));
  return device_index;
}

// device_ is initialised first (member order), so the stream and event live on that device.
NcclComm::NcclComm(MPI_Comm mpi_comm, int device_index, Watchdog* watchdog)
    : device_(select_device(device_index)),
      rank_(rank_in(mpi_comm)),
      size_(size_of(mpi_comm)),
      handle_(join_watched(mpi_comm, size_, rank_, watchdog)),
      watchdog_(watchdog),
      async_error_watch_(watch_async_error(watchdog, handle_)) {}

NcclComm::~NcclComm() {
  // Let queued collectives finish before the communicator is destroyed; but not when it ends by
  // ncclCommAbort, where waiting could block forever on a peer that is gone.
  if (handle_.ends_by_abort()) return;
  if (cudaStreamSynchronize(stream_.get()) != cudaSuccess) {
    write_stderr_line(process_tag() + " warning: NCCL communicator did not shut down cleanly");
    handle_.abort();  // ncclCommDestroy would wait on the failed stream
  }
}

cudaStream_t NcclComm::enter_collective() {
  if (handle_.aborted())
    throw Error("NcclComm used after abort", ExitCode::kInternal, Raised::kThisRank);
  const cudaStream_t compute = current_compute_stream(device_);
  compute_ready_.record(compute);
  compute_ready_.block(stream_.get());
  if (watchdog_ && watchdog_->flight()) {
    // Fires when the NCCL stream reaches the collective: the flight record's "started".
    started_ = std::make_shared<CudaEvent>();
    started_->record(stream_.get());
  }
  return compute;
}

std::shared_ptr<CudaEvent> NcclComm::finish_collective(const char* what,
                                                       const torch::Tensor& tensor) {
  auto done = std::make_shared<CudaEvent>();
  done->record(stream_.get());
  if (watchdog_) {
    // Queued on the stream now; started when the stream reaches it (the start event), which the
    // watchdog's poll sees.
    FlightRecorder* recorder = watchdog_->flight();
    const uint64_t flight = recorder ? recorder->queued(FlightRecorder::kTrainingStream, what,
                                                        tensor.numel() * tensor.element_size(),
                                                        c10::toString(tensor.scalar_type()), "NCCL")
                                     : 0;
    // Polled from the watchdog's thread, whose current device may be another one.
    watchdog_->watch_until(
        fmt::format("NCCL {} #{} ({} x {})", what, ++collectives_, tensor.numel(),
                    c10::toString(tensor.scalar_type())),
        [done, started = std::exchange(started_, nullptr), device = device_, recorder,
         flight]() mutable {
          cudaSetDevice(device);
          // Any answer but "not ready" ends the watch; errors surface in
          // the training thread.
          const bool ended = cudaEventQuery(done->get()) != cudaErrorNotReady;
          if (started && (ended || cudaEventQuery(started->get()) != cudaErrorNotReady)) {
            if (recorder) recorder->started(flight);
            started.reset();
          }
          if (ended && recorder) recorder->completed(flight);
          return ended;
        });
  }
  return done;
}

void NcclComm::leave_collective(cudaStream_t compute, const char* what,
                                const torch::Tensor& tensor) {
  finish_collective(what, tensor)->block(compute);
}

std::shared_ptr<Work> NcclComm::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  require_device_contiguous(tensor, device_, "all_reduce");
  const cudaStream_t compute = enter_collective();
  DDPT_CHECK_NCCL(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(),
                                static_cast<size_t>(tensor.numel()), nccl_type_of(tensor),
                                nccl_op_of(op), handle_.get(), stream_.get()));
  std::shared_ptr<CudaEvent> done = finish_collective("all_reduce", tensor);
  return std::make_shared<NcclWork>(std::move(done), compute,
                                    std::vector<torch::Tensor>{std::move(tensor)});
}

std::shared_ptr<Work> NcclComm::reduce_scatter_async(torch::Tensor input, torch::Tensor output) {
  require_device_contiguous(input, device_, "reduce_scatter");
  require_device_contiguous(output, device_, "reduce_scatter");
  if (input.numel() != output.numel() * size_ || input.scalar_type() != output.scalar_type()) {
    throw Error(
        "NcclComm::reduce_scatter: the input must hold world size x the output's "
        "elements, of the same dtype",
        ExitCode::kInternal, Raised::kThisRank);
  }
  const cudaStream_t compute = enter_collective();
  DDPT_CHECK_NCCL(ncclReduceScatter(input.data_ptr(), output.data_ptr(),
                                    static_cast<size_t>(output.numel()), nccl_type_of(output),
                                    ncclSum, handle_.get(), stream_.get()));
  std::shared_ptr<CudaEvent> done = finish_collective("reduce_scatter", input);
  return std::make_shared<NcclWork>(
      std::move(done), compute, std::vector<torch::Tensor>{std::move(input), std::move(output)});
}

std::shared_ptr<Work> NcclComm::all_gather_in_place_async(torch::Tensor tensor) {
  require_device_contiguous(tensor, device_, "all_gather_in_place");
  if (tensor.numel() % size_ != 0) {
    throw Error(
        "NcclComm::all_gather_in_place: the tensor's elements must divide by the world "
        "size",
        ExitCode::kInternal, Raised::kThisRank);
  }
  const int64_t block = tensor.numel() / size_;
  // In place as NCCL defines it: the send buffer is this rank's block of the receive buffer.
  const auto* own = static_cast<const char*>(tensor.data_ptr()) +
                    static_cast<size_t>(block * rank_) * tensor.element_size();
  const cudaStream_t compute = enter_collective();
  DDPT_CHECK_NCCL(ncclAllGather(own, tensor.data_ptr(), static_cast<size_t>(block),
                                nccl_type_of(tensor), handle_.get(), stream_.get()));
  std::shared_ptr<CudaEvent> done = finish_collective("all_gather", tensor);
  return std::make_shared<NcclWork>(std::move(done), compute,
                                    std::vector<torch::Tensor>{std::move(tensor)});
}

void NcclComm::broadcast(torch::Tensor tensor, int root) {
  require_device_contiguous(tensor, device_, "broadcast");
  const cudaStream_t compute = enter_collective();
  DDPT_CHECK_NCCL(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(),
                                static_cast<size_t>(tensor.numel()), nccl_type_of(tensor), root,
                                handle_.get(), stream_.get()));
  leave_collective(compute, "broadcast", tensor);
}

torch::Tensor NcclComm::all_gather(const torch::Tensor& tensor) {
  const torch::Tensor input = tensor.contiguous();
  require_device_contiguous(input, device_, "all_gather");
  std::vector<int64_t> shape{size_};
  shape.insert(shape.end(), input.sizes().begin(), input.sizes().end());
  torch::Tensor output = torch::empty(shape, input.options());
  const cudaStream_t compute = enter_collective();
  DDPT_CHECK_NCCL(ncclAllGather(input.data_ptr(), output.data_ptr(),
                                static_cast<size_t>(input.numel()), nccl_type_of(input),
                                handle_.get(), stream_.get()));
  leave_collective(compute, "all_gather", input);
  return output;
}

void NcclComm::barrier() {
  // NCCL has no barrier: a one-element all-reduce, then wait for it on the host.
  torch::Tensor token = torch::zeros({1}, torch::TensorOptions().device(device()));
  all_reduce(token, ReduceOp::kSum);
  DDPT_CHECK_CUDA(cudaStreamSynchronize(current_compute_stream(device_)));
}

}  // namespace ddpt
