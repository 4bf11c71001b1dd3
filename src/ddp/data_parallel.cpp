#include "ddp/data_parallel.hpp"

namespace ddpt {

void broadcast_from_rank0(const std::vector<NamedTensor>& tensors, Communicator& comm) {
  torch::NoGradGuard no_grad;
  for (const auto& named : tensors) {
    torch::Tensor data = named.tensor.detach();
    if (data.is_contiguous()) {
      comm.broadcast(data, 0);
    } else {
      torch::Tensor packed = data.contiguous();
      comm.broadcast(packed, 0);
      data.copy_(packed);
    }
  }
}

DataParallel::DataParallel(std::vector<NamedTensor> params, std::vector<NamedTensor> buffers,
                           Communicator& comm, const DataParallelOptions& options)
    : comm_(comm), buffers_(std::move(buffers)) {
  broadcast_from_rank0(params, comm);
  broadcast_from_rank0(buffers_, comm);
  reducer_ =
      std::make_unique<Reducer>(std::move(params), comm, mib_to_bytes(options.first_bucket_mb),
                                mib_to_bytes(options.bucket_mb), options.wire_dtype,
                                options.reduction, options.shared_memory);
}

void DataParallel::backward(const torch::Tensor& loss, bool sync) {
  reducer_->prepare_for_backward(sync);
  // Dividing the loss (one scalar) by the world size makes every local gradient g/N, so a plain
  // sum across ranks is the average: no extra pass over the gradients after the all-reduce.
  // Micro-steps without sync accumulate g/N as well, so the final sum is unchanged.
  if (comm_.size() > 1) {
    (loss / static_cast<double>(comm_.size())).backward();
  } else {
    loss.backward();
  }
  if (sync) reducer_->finalize_backward();
}

}  // namespace ddpt
