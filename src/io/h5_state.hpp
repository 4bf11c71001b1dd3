// StateWriter and StateReader over an HDF5 group: how the parts of state/checkpointed.hpp land in
// a checkpoint file. Groups become HDF5 groups, tensors and per-rank rows datasets (Fletcher32),
// scalars attributes. Writing is collective over the file's MPI communicator.
#pragma once

#include "h5/h5_group.hpp"
#include "state/checkpointed.hpp"

namespace ddpt {

class H5StateWriter : public StateWriter {
 public:
  // `group`: an open group (or file) of a file opened with the MPI-IO driver; rank
  // kReplicatedTensorRank writes the replicated tensors, every rank its row of the per-rank ones
  // and its part of the sharded ones.
  H5StateWriter(H5Group group, int rank, int world_size);
  std::unique_ptr<StateWriter> group(const std::string& name) override;
  void tensor(const std::string& name, const torch::Tensor& value) override;
  void rank_row(const std::string& name, const torch::Tensor& row) override;
  void tensor_part(const std::string& name, const std::vector<int64_t>& shape, int64_t first,
                   const torch::Tensor& part) override;
  void scalar(const std::string& name, int64_t value) override;
  void scalar(const std::string& name, double value) override;
  void scalar(const std::string& name, const std::string& value) override;

 private:
  H5Group group_;
  int rank_;
  int world_size_;
};

class H5StateReader : public StateReader {
 public:
  H5StateReader(H5Group group, int rank, int world_size, int64_t saved_world_size);
  bool has(const std::string& name) const override;
  std::unique_ptr<StateReader> group(const std::string& name) const override;
  torch::Tensor tensor(const std::string& name) const override;
  torch::Tensor tensor_part(const std::string& name, int64_t first, int64_t count) const override;
  torch::Tensor rank_rows(const std::string& name) const override;
  int64_t int_scalar(const std::string& name) const override;
  double double_scalar(const std::string& name) const override;
  std::string string_scalar(const std::string& name) const override;

 private:
  H5Group group_;
};

}  // namespace ddpt
