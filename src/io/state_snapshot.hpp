// A checkpoint's contents as a list of StateWriter calls. Every checkpoint is written by replaying
// one: a synchronous write replays it at once on the training thread (the tensors are referenced,
// not copied); with checkpoint.async the parts save into a snapshot that copies each tensor to
// host memory (pinned for GPU tensors) at the step boundary, training goes on, and the background
// writer replays it. One code path, so both write the same file, byte for byte.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "state/checkpointed.hpp"

namespace ddpt {

// The shape and type of a host buffer, and whether it is pinned (it receives a GPU tensor).
struct TensorLayout {
  std::vector<int64_t> sizes;
  torch::ScalarType dtype = torch::kFloat;
  bool pinned = false;
};

// Allocates host buffers of `layout` and touches every page (so a later copy into them does not
// fault): meant for a background thread, ahead of the first checkpoint of checkpoint.async.
std::vector<torch::Tensor> allocate_host_memory(const std::vector<TensorLayout>& layout);

class StateSnapshot : public StateWriter {
 public:
  // `rank`: this rank; of a replicated tensor, only rank kReplicatedTensorRank's value is read
  // (state/checkpointed.hpp), so the other ranks keep a shape-only stand-in: at 4 ranks with
  // checkpoint.async, ranks 1-3 copied the whole model and its moments for nothing.
  // `copy`: take host copies of the tensors (for a replay after training has moved on).
  // `host_memory`: buffers to copy into, taken in call order where shape and type match (a written
  // snapshot's release_host_memory(), or allocate_host_memory()), instead of allocating and
  // faulting in fresh memory during the stall: on the 2-core machine a first copy into fresh
  // memory took many times as long as into touched memory (benchmarks.md, "Choices measured":
  // snapshot memory touched ahead).
  StateSnapshot(int rank, bool copy, std::vector<torch::Tensor> host_memory = {});
  std::unique_ptr<StateWriter> group(const std::string& name) override;
  void tensor(const std::string& name, const torch::Tensor& value) override;
  void rank_row(const std::string& name, const torch::Tensor& row) override;
  void tensor_part(const std::string& name, const std::vector<int64_t>& shape, int64_t first,
                   const torch::Tensor& part) override;
  void scalar(const std::string& name, int64_t value) override;
  void scalar(const std::string& name, double value) override;
  void scalar(const std::string& name, const std::string& value) override;

  // Waits for the copies from the GPU (if any) to land in host memory.
  void wait_for_copies() const;
  // Makes the recorded calls on `root`, in order, each under the HDF5 lock (h5/h5_lock.hpp).
  void replay(StateWriter& root) const;
  // The host tensors of a copying snapshot that has been written, for the next one to reuse.
  std::vector<torch::Tensor> release_host_memory();
  // The host buffers a copying snapshot of the same calls would allocate, in call order, from
  // this (non-copying) one.
  std::vector<TensorLayout> host_memory_layout() const;
  // The bytes of tensor data the file of this snapshot holds, over all `world_size` ranks (a
  // rank row is one of world_size rows; a tensor part is a part of its full shape): what must fit
  // on the disk before the write starts (io/disk_space.hpp).
  int64_t file_data_bytes(int world_size) const;

 private:
  struct Call;
  struct Spares {  // host buffers to copy into, taken in call order
    std::vector<torch::Tensor> tensors;
    size_t next = 0;
  };
  StateSnapshot(std::shared_ptr<std::vector<Call>> calls, std::string path, int rank, bool copy,
                std::shared_ptr<Spares> spares);
  void record(Call call);
  torch::Tensor keep(const torch::Tensor& value) const;  // a copy, or the tensor itself

  std::shared_ptr<std::vector<Call>> calls_;  // shared by the writers of every group
  std::string path_;                          // of this writer's group: "" is the root
  int rank_;
  bool copy_;
  std::shared_ptr<Spares> spares_;  // shared by the writers of every group
};

}  // namespace ddpt
