// The collective operations the engine needs, behind one interface with two backends:
// MpiComm (host tensors, CPU runs) and NcclComm (CUDA tensors). Every method marked Collective
// (the operations and allocate_buffer) is called by all ranks of the communicator, in the same
// order; the accessors (rank, size, backend, device, node-shared memory) are local.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "comm/node_shared_memory.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

enum class ReduceOp { kSum, kAvg };

// Handle of an asynchronous collective.
class Work {
 public:
  virtual ~Work() = default;
  // MPI: blocks until the result is in the tensor. NCCL: orders the caller's compute stream
  // after the collective (no host synchronisation).
  virtual void wait() = 0;
  // When the backend began executing the collective (MPI: the communication thread entered it;
  // NCCL: it was enqueued). For tracing and for the overlap test.
  virtual Clock::time_point started_at() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend_name() const = 0;  // "mpi" or "nccl"
  virtual torch::Device device() const = 0;      // where tensors passed in must live

  // Collective: reduces a contiguous tensor in place across all ranks; returns at once.
  virtual std::shared_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op) = 0;
  // Collective: all_reduce_async then wait.
  void all_reduce(torch::Tensor tensor, ReduceOp op) {
    all_reduce_async(std::move(tensor), op)->wait();
  }
  // Collective (ZeRO-1): sums `input` (size() x n elements) over ranks; this rank's block of the
  // sum, elements [rank() x n, (rank() + 1) x n), lands in `output` (n elements, same dtype; it
  // may be that block of `input`); returns at once. A buffer summed in shared memory
  // (NodeSharedMemory::in_shared_memory) also holds the sum in that block afterwards; the rest of
  // `input` is only read.
  virtual std::shared_ptr<Work> reduce_scatter_async(torch::Tensor input, torch::Tensor output) = 0;
  // Collective (ZeRO-1): `tensor` has size() x n elements, of which this rank has filled its own
  // block; on completion every block holds its rank's values; returns at once.
  virtual std::shared_ptr<Work> all_gather_in_place_async(torch::Tensor tensor) = 0;
  // Collective: overwrite `tensor` on every rank with root's values.
  virtual void broadcast(torch::Tensor tensor, int root) = 0;
  // Collective: returns a tensor of shape [size(), tensor.sizes()...], row r from rank r.
  virtual torch::Tensor all_gather(const torch::Tensor& tensor) = 0;
  // Collective: returns when every rank has entered it.
  virtual void barrier() = 0;

  // Collective: a zeroed contiguous buffer of `numel` elements that will be all-reduced or
  // reduce-scattered whole, again and again (a gradient bucket). A backend may put it where that
  // is fastest: MPI with every rank on one node puts it in memory the ranks share
  // (comm/node_all_reduce.hpp).
  virtual torch::Tensor allocate_buffer(int64_t numel, const torch::TensorOptions& options) {
    return torch::zeros({numel}, options);
  }
  // The backend's node-shared memory (comm/node_shared_memory.hpp), or null where it has none.
  virtual NodeSharedMemory* node_shared_memory() { return nullptr; }
  virtual const NodeSharedMemory* node_shared_memory() const { return nullptr; }
};

// Whether `buffer`, from comm.allocate_buffer(), is summed in memory the node's ranks share.
inline bool in_shared_memory(const Communicator& comm, const torch::Tensor& buffer) {
  const NodeSharedMemory* shared = comm.node_shared_memory();
  return shared != nullptr && shared->in_shared_memory(buffer);
}

}  // namespace ddpt
