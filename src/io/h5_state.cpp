#include "io/h5_state.hpp"

#include "h5/h5_file.hpp"
#include "h5/h5_tensor.hpp"
#include "util/error.hpp"

namespace ddpt {

H5StateWriter::H5StateWriter(H5Group group, int rank, int world_size)
    : group_(std::move(group)), rank_(rank), world_size_(world_size) {}

std::unique_ptr<StateWriter> H5StateWriter::group(const std::string& name) {
  // Several parts share a group (/loop): the first creates it, the others open it.
  H5Group sub = has_object(group_.id(), name) ? H5Group::open(group_.id(), name)
                                              : H5Group::create(group_.id(), name);
  return std::make_unique<H5StateWriter>(std::move(sub), rank_, world_size_);
}

void H5StateWriter::tensor(const std::string& name, const torch::Tensor& value) {
  write_tensor(group_.id(), name, value, /*writer=*/rank_ == kReplicatedTensorRank);
}

void H5StateWriter::rank_row(const std::string& name, const torch::Tensor& row) {
  write_row(group_.id(), name, row, rank_, world_size_);
}

void H5StateWriter::tensor_part(const std::string& name, const std::vector<int64_t>& shape,
                                int64_t first, const torch::Tensor& part) {
  write_tensor_part(group_.id(), name, shape, first, part);
}

void H5StateWriter::scalar(const std::string& name, int64_t value) {
  write_attribute(group_.id(), name, value);
}

void H5StateWriter::scalar(const std::string& name, double value) {
  write_attribute(group_.id(), name, value);
}

void H5StateWriter::scalar(const std::string& name, const std::string& value) {
  write_attribute(group_.id(), name, value);
}

H5StateReader::H5StateReader(H5Group group, int rank, int world_size, int64_t saved_world_size)
    : StateReader(rank, world_size, saved_world_size), group_(std::move(group)) {}

bool H5StateReader::has(const std::string& name) const {
  return has_attribute(group_.id(), name) || has_object(group_.id(), name);
}

std::unique_ptr<StateReader> H5StateReader::group(const std::string& name) const {
  return std::make_unique<H5StateReader>(H5Group::open(group_.id(), name), rank(), world_size(),
                                         saved_world_size());
}

torch::Tensor H5StateReader::tensor(const std::string& name) const {
  return read_tensor(group_.id(), name);
}

torch::Tensor H5StateReader::tensor_part(const std::string& name, int64_t first,
                                         int64_t count) const {
  return read_tensor_part(group_.id(), name, first, count);
}

torch::Tensor H5StateReader::rank_rows(const std::string& name) const {
  const torch::Tensor rows = read_tensor(group_.id(), name);
  if (rows.dim() < 1) {  // a damaged file (rows are written [ranks, ...])
    throw DataError("dataset '" + name + "' is a scalar, not one row per rank", Raised::kAllRanks);
  }
  return rows.reshape({rows.size(0), -1});
}

int64_t H5StateReader::int_scalar(const std::string& name) const {
  return read_int_attribute(group_.id(), name);  // HDF5 converts the float64 of older files
}

double H5StateReader::double_scalar(const std::string& name) const {
  return read_double_attribute(group_.id(), name);
}

std::string H5StateReader::string_scalar(const std::string& name) const {
  return read_string_attribute(group_.id(), name);
}

}  // namespace ddpt
