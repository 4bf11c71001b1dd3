// What a backend whose ranks can share host memory offers beyond the collectives: MPI, whose
// buffers on a communicator within one node are summed in memory the node's ranks map
// (comm/node_all_reduce.hpp). A capability, not part of Communicator: no other backend has it, so
// asking for it (Communicator::node_shared_memory) replaces virtuals that would throw or answer
// "no" on every backend but one.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

namespace ddpt {

class Work;

class NodeSharedMemory {
 public:
  virtual ~NodeSharedMemory() = default;
  // Whether `buffer`, from Communicator::allocate_buffer(), is summed in memory the node's ranks
  // share (a reduce-scatter of it leaves the sum in this rank's block of it too).
  virtual bool in_shared_memory(const torch::Tensor& buffer) const = 0;
  // Communicator::reduce_scatter_async that also gives, once waited, the sum of the squares of
  // every element of the summed input (all ranks' blocks) in `*squares`, in double, the same bits
  // on every rank, without another pass over the data or another collective. Only for a buffer
  // for which in_shared_memory() holds (an Error otherwise).
  virtual std::shared_ptr<Work> reduce_scatter_with_squares_async(torch::Tensor input,
                                                                  torch::Tensor output,
                                                                  double* squares) = 0;
  // Collective: `numel` zeroed elements that every rank maps, the same memory on every rank (one
  // copy per node), for `subject` (named in a warning if shared memory is refused). Undefined on
  // every rank where that cannot be: a communicator across nodes, or a refused allocation.
  virtual torch::Tensor allocate_common(int64_t numel, const torch::TensorOptions& options,
                                        const std::string& subject) = 0;
};

}  // namespace ddpt
