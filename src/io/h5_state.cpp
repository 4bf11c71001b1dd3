#include "io/h5_state.hpp"

#include "h5/h5_file.hpp"
#include "util/error.hpp"

namespace ddpt {

H5StateWriter::H5StateWriter(H5Group group, int rank, int world_size)
    : group_(std::move(group)), rank_(rank), world_size_(world_size) {}

std::unique_ptr<StateWriter> H5StateWriter::group(const std::string& name) {
  // Several parts share a group (/loop): the first creates it, the others open it.
  H5Group sub = group_.has(name) ? group_.open_group(name) : group_.create_group(name);
  return std::make_unique<H5StateWriter>(std::move(sub), rank_, world_size_);
}

void H5StateWriter::tensor(const std::string& name, const torch::Tensor& value) {
  group_.write_tensor(name, value, /*writer=*/rank_ == kReplicatedTensorRank);
}

void H5StateWriter::rank_row(const std::string& name, const torch::Tensor& row) {
  group_.write_row(name, row, rank_, world_size_);
}

void H5StateWriter::tensor_part(const std::string& name, const std::vector<int64_t>& shape,
                                int64_t first, const torch::Tensor& part) {
  group_.write_tensor_part(name, shape, first, part);
}

void H5StateWriter::scalar(const std::string& name, int64_t value) {
  group_.write_attribute(name, value);
}

void H5StateWriter::scalar(const std::string& name, double value) {
  group_.write_attribute(name, value);
}

void H5StateWriter::scalar(const std::string& name, const std::string& value) {
  group_.write_attribute(name, value);
}

H5StateReader::H5StateReader(H5Group group, int rank, int world_size, int64_t saved_world_size)
    : StateReader(rank, world_size, saved_world_size), group_(std::move(group)) {}

bool H5StateReader::has(const std::string& name) const {
  return group_.has_attribute(name) || group_.has(name);
}

std::unique_ptr<StateReader> H5StateReader::group(const std::string& name) const {
  return std::make_unique<H5StateReader>(group_.open_group(name), rank(), world_size(),
                                         saved_world_size());
}

torch::Tensor H5StateReader::tensor(const std::string& name) const {
  return group_.read_tensor(name);
}

torch::Tensor H5StateReader::tensor_part(const std::string& name, int64_t first,
                                         int64_t count) const {
  return group_.read_tensor_part(name, first, count);
}

torch::Tensor H5StateReader::rank_rows(const std::string& name) const {
  const torch::Tensor rows = group_.read_tensor(name);
  if (rows.dim() < 1) {  // a damaged file (rows are written [ranks, ...])
    throw DataError("dataset '" + name + "' is a scalar, not one row per rank", Raised::kAllRanks);
  }
  return rows.reshape({rows.size(0), -1});
}

int64_t H5StateReader::int_scalar(const std::string& name) const {
  return group_.read_int_attribute(name);  // HDF5 converts the float64 of older files
}

double H5StateReader::double_scalar(const std::string& name) const {
  return group_.read_double_attribute(name);
}

std::string H5StateReader::string_scalar(const std::string& name) const {
  return group_.read_string_attribute(name);
}

}  // namespace ddpt
