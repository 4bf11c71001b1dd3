// What a backend whose ranks can share host memory offers beyond the collectives: MPI, whose
// buffers on a communicator within one node are summed (comm/node_all_reduce.hpp) and gathered
// (comm/node_all_gather.hpp) in memory the node's ranks map. A capability, not part of
// Communicator: no other backend has it, so asking for it (Communicator::node_shared_memory)
// replaces virtuals that would throw or answer "no" on every backend but one.
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

  // Collective: a buffer of `numel` elements (a multiple of the world size) that every rank maps,
  // one copy per node, to be all-gathered into again and again (ZeRO-3's units, for `subject`).
  // Undefined on every rank where that cannot be, as for allocate_common().
  virtual torch::Tensor allocate_gather_buffer(int64_t numel, const torch::TensorOptions& options,
                                               const std::string& subject) = 0;
  // Collective, on a buffer from allocate_gather_buffer() (or a tensor over its start, whose
  // length divides by the world size: its blocks are that length's): once no rank reads the
  // buffer's previous gather any more (each has called done_reading()), `block` goes into this
  // rank's block of it; once waited, every rank's block is in. Returns after this rank's block is
  // in.
  virtual std::shared_ptr<Work> all_gather_into_shared_async(const torch::Tensor& block,
                                                             torch::Tensor buffer) = 0;
  // This rank reads `buffer` no more until its next all_gather_into_shared_async(); not collective,
  // but every rank calls it once after each gather, in the same order.
  virtual void done_reading(const torch::Tensor& buffer) = 0;
};

}  // namespace ddpt
