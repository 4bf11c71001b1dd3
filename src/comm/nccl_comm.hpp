// Communicator over NCCL on CUDA tensors. Collectives run on the communicator's own stream,
// ordered against torch's current compute stream with CUDA events: the step loop never waits
// on the host for communication.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>

#include "comm/communicator.hpp"
#include "comm/nccl_handle.hpp"
#include "comm/watchdog.hpp"
#include "runtime/cuda_handles.hpp"

namespace ddpt {

class NcclComm final : public Communicator {
 public:
  // Collective over `mpi_comm`: rank 0's unique id is broadcast over MPI, then every rank joins
  // with ncclCommInitRank on CUDA device `device_index` (needs a GPU). `watchdog` (may be null)
  // watches that set-up (a peer that never joins would keep this rank in it forever), every
  // collective from its enqueueing until its completion event fires, and NCCL's asynchronous
  // error (a peer or the network failed), which ends the job at once; it must outlive the
  // communicator.
  NcclComm(MPI_Comm mpi_comm, int device_index, Watchdog* watchdog = nullptr);
  // Waits for the queued collectives, then ncclCommDestroy; after an abort or during stack
  // unwinding, ncclCommAbort without waiting (see NcclHandle).
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "nccl"; }
  torch::Device device() const override { return {torch::kCUDA, static_cast<int8_t>(device_)}; }

  std::shared_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  std::shared_ptr<Work> reduce_scatter_async(torch::Tensor input, torch::Tensor output) override;
  std::shared_ptr<Work> all_gather_in_place_async(torch::Tensor tensor) override;
  void broadcast(torch::Tensor tensor, int root) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  void barrier() override;

 private:
  // Makes the NCCL stream wait for work already queued on the compute stream. Throws if the
  // communicator was aborted (NcclHandle::abort_all() on the error path).
  cudaStream_t enter_collective();
  // Records the completion of what was queued on the NCCL stream, and has the watchdog watch it
  // under the name "NCCL <what> #N (...)".
  std::shared_ptr<CudaEvent> finish_collective(const char* what, const torch::Tensor& tensor);
  // Makes the compute stream wait for what was queued on the NCCL stream.
  void leave_collective(cudaStream_t compute, const char* what, const torch::Tensor& tensor);

  static int select_device(int device_index);  // cudaSetDevice, then returns the index

  int device_ = 0;  // first: the members below are created on this device
  int rank_ = 0;
  int size_ = 1;
  CudaStream stream_;
  CudaEvent compute_ready_;
  // The start of the collective being queued, for its flight record (null without one).
  std::shared_ptr<CudaEvent> started_;
  NcclHandle handle_;  // after the stream: ends before it
  Watchdog* watchdog_;
  // The watchdog's check of handle_'s asynchronous error; after handle_: ends before it.
  Watchdog::Scope async_error_watch_;
  int64_t collectives_ = 0;  // issued so far: numbers them alike on every rank
};

}  // namespace ddpt
