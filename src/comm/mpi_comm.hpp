// Communicator over MPI on host (CPU) tensors. Owns a duplicate of the MPI communicator it is
// given (so its traffic never mixes with anyone else's) and a communication thread that issues
// every MPI call: all-reduces of finished gradient buckets run there while backward goes on.
// Buffers from allocate_buffer() on a communicator within one node are summed through shared
// memory instead of MPI_Allreduce or MPI_Reduce_scatter_block (comm/node_all_reduce.hpp): by a
// helper thread at the lowest priority and by the thread that waits for the sum; and buffers from
// allocate_gather_buffer() are gathered there instead of by MPI_Allgather
// (comm/node_all_gather.hpp). That is its NodeSharedMemory capability
// (comm/node_shared_memory.hpp).
#pragma once

#include <mpi.h>

#include "comm/comm_thread.hpp"
#include "comm/communicator.hpp"
#include "comm/node_all_gather.hpp"
#include "comm/node_all_reduce.hpp"
#include "comm/node_shared_memory.hpp"
#include "comm/watchdog.hpp"
#include "runtime/mpi_comm_handle.hpp"
#include "util/fault_injector.hpp"

namespace ddpt {

class MpiComm final : public Communicator, public NodeSharedMemory {
 public:
  // Collective over `comm` (MPI_Comm_dup). Every collective is watched by `watchdog` (may be
  // null: unwatched).
  // `faults` may leave out an all-reduce (a test's; FaultInjector::leave_out_all_reduce).
  explicit MpiComm(MPI_Comm comm, Watchdog* watchdog = nullptr,
                   FaultInjector& faults = no_faults());
  ~MpiComm() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "mpi"; }
  torch::Device device() const override { return torch::kCPU; }

  std::shared_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  std::shared_ptr<Work> reduce_scatter_async(torch::Tensor input, torch::Tensor output) override;
  std::shared_ptr<Work> all_gather_in_place_async(torch::Tensor tensor) override;
  void broadcast(torch::Tensor tensor, int root) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  void barrier() override;
  torch::Tensor allocate_buffer(int64_t numel, const torch::TensorOptions& options) override;
  NodeSharedMemory* node_shared_memory() override { return this; }
  const NodeSharedMemory* node_shared_memory() const override { return this; }

  // NodeSharedMemory: every rank of the communicator on one node.
  bool in_shared_memory(const torch::Tensor& buffer) const override;
  std::shared_ptr<Work> reduce_scatter_with_squares_async(torch::Tensor input, torch::Tensor output,
                                                          double* squares) override;
  torch::Tensor allocate_common(int64_t numel, const torch::TensorOptions& options,
                                const std::string& subject) override;
  torch::Tensor allocate_gather_buffer(int64_t numel, const torch::TensorOptions& options,
                                       const std::string& subject) override;
  std::shared_ptr<Work> all_gather_into_shared_async(const torch::Tensor& block,
                                                     torch::Tensor buffer) override;
  void done_reading(const torch::Tensor& buffer) override;

 private:
  // A collective as the watchdog and the flight recorder know it.
  struct Label {
    std::string name;     // "MPI all_reduce #12 (1000 x float)": alike on every rank
    uint64_t flight = 0;  // its flight record (0: none)
  };
  // Queues `collective` on the communication thread, watched under `label`; returns its Work.
  std::shared_ptr<Work> submit_collective(Label label, std::function<void()> collective);
  // Arrives at a sum of `tensor` (owned by node_) and has the helper thread sum its chunks; the
  // Work sums what is left when waited, then runs `then`.
  std::shared_ptr<Work> submit_node_sum(Label label, const torch::Tensor& tensor, NodeSumKind kind,
                                        std::function<void(const NodeSum&)> then);
  // Collective: `allocate` (a node-shared allocation) on the communication thread, watched; an
  // undefined tensor without running it where nothing can be shared (one rank, device memory).
  torch::Tensor allocate_on_node(const torch::TensorOptions& options,
                                 const std::function<torch::Tensor()>& allocate);
  // Runs `job` on the communication thread and waits for it (rethrowing its error).
  void run_blocking(std::function<void()> job);
  // The next collective's label, on the calling thread (so numbers follow program order), and its
  // flight record: `operation` of `tensor` through `backend` ("MPI", "MPI shared memory").
  Label next_collective(const char* operation, const char* backend, const torch::Tensor& tensor);
  // The same for a collective without a tensor ("MPI barrier #3").
  Label next_collective(const char* operation);
  FlightRecorder* flight() const { return watchdog_ ? watchdog_->flight() : nullptr; }

  MpiCommHandle comm_;
  int rank_ = 0;
  int size_ = 1;
  Watchdog* watchdog_;
  int64_t collectives_ = 0;  // issued so far, on the calling thread
  FaultInjector& faults_;
  std::unique_ptr<NodeSegments> segments_;  // node-shared memory, for node_ and gathers_
  std::unique_ptr<NodeAllReduce> node_;     // sums of buffers in node-shared memory
  std::unique_ptr<NodeAllGather> gathers_;  // gathers into buffers in node-shared memory
  // Sums node_'s chunks with the cycles this rank's compute leaves over; destroyed before node_.
  CommThread helper_{CommThread::Priority::kBackground};
  CommThread thread_;  // destroyed first: drains queued collectives before comm_ is freed
};

}  // namespace ddpt
