#include "h5/h5_dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "h5/h5_check.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_group.hpp"
#include "h5/h5_tensor.hpp"
#include "h5/h5_types.hpp"

namespace ddpt {
namespace {

// Chunk cache per opened dataset. HDF5's default (1 MiB) is smaller than many files' chunks, so
// random row reads would decode (and checksum) a whole chunk for every row; 32 MiB keeps recently
// used chunks of a sampled dataset in memory. Slots: a prime well above the chunks that fit.
constexpr size_t kChunkCacheBytes = size_t{32} << 20;
constexpr size_t kChunkCacheSlots = 12421;

std::vector<hsize_t> to_hsize(const std::vector<int64_t>& v) {
  return std::vector<hsize_t>(v.begin(), v.end());
}

// What a dataset read whole may hold beyond its stored bytes: a series whose extent grew into a
// chunk that was not yet written when its job was killed (metrics rows: 8 KiB chunks).
constexpr int64_t kUnstoredAllowanceBytes = int64_t{1} << 20;

// Bytes of an array of `shape`, saturating at INT64_MAX: a damaged header's dimensions overflow.
int64_t bytes_of(const std::vector<int64_t>& shape, int64_t element_size) {
  int64_t bytes = element_size;
  for (const int64_t n : shape) {
    if (n != 0 && bytes > INT64_MAX / n) return INT64_MAX;
    bytes *= n;
  }
  return bytes;
}

// Collective when the file uses the MPI-IO driver, independent otherwise.
H5Id transfer_for(hid_t dataset) {
  H5Id transfer(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_XFER)));
  H5Id file(DDPT_CHECK_H5(H5Iget_file_id(dataset)));
  H5Id access(DDPT_CHECK_H5(H5Fget_access_plist(file.get())));
  if (H5Pget_driver(access.get()) == H5FD_MPIO) {
    DDPT_CHECK_H5(H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_COLLECTIVE));
  }
  return transfer;
}

// "/group/name": where `name` under `parent` sits in its file, for messages.
std::string path_in_file(hid_t parent, const std::string& name) {
  const ssize_t length = H5Iget_name(parent, nullptr, 0);
  if (length <= 0) return name;
  std::string path(static_cast<size_t>(length) + 1, '\0');
  H5Iget_name(parent, path.data(), path.size());
  path.resize(static_cast<size_t>(length));
  return (path == "/" ? "" : path) + "/" + name;
}

std::string file_name_of(hid_t object) {
  const ssize_t length = H5Fget_name(object, nullptr, 0);
  if (length <= 0) return "";
  std::string name(static_cast<size_t>(length) + 1, '\0');
  H5Fget_name(object, name.data(), name.size());
  name.resize(static_cast<size_t>(length));
  return name;
}

// The elements [begin, end) of the sub-array below the index prefix start[0..dim) (each index
// fixed, extent 1), counted in row-major order within it, as boxes appended to `boxes` in that
// order: a partial first row and a partial last row (each one level down) around a box of whole
// rows.
void add_run_boxes(const std::vector<int64_t>& shape, size_t dim, std::vector<hsize_t>& start,
                   std::vector<hsize_t>& extent, int64_t begin, int64_t end,
                   std::vector<ElementBox>& boxes) {
  if (begin >= end) return;
  int64_t row = 1;  // elements per index of dimension `dim`
  for (size_t d = dim + 1; d < shape.size(); ++d) row *= shape[d];
  auto partial_row = [&](int64_t index, int64_t from, int64_t to) {
    start[dim] = static_cast<hsize_t>(index);
    extent[dim] = 1;
    add_run_boxes(shape, dim + 1, start, extent, from, to, boxes);
  };
  if (begin % row != 0) {
    const int64_t index = begin / row;
    const int64_t row_end = std::min(end, (index + 1) * row);
    partial_row(index, begin - index * row, row_end - index * row);
    begin = row_end;
  }
  if (const int64_t whole = (end - begin) / row; whole > 0) {
    ElementBox box{start, extent};
    box.start[dim] = static_cast<hsize_t>(begin / row);
    box.extent[dim] = static_cast<hsize_t>(whole);
    for (size_t d = dim + 1; d < shape.size(); ++d) {
      box.start[d] = 0;
      box.extent[d] = static_cast<hsize_t>(shape[d]);
    }
    boxes.push_back(std::move(box));
    begin += whole * row;
  }
  if (begin < end) partial_row(begin / row, 0, end - begin);
}

}  // namespace

void check_stored_size(hid_t dataset, int64_t bytes, const std::string& where) {
  const auto stored = static_cast<int64_t>(H5Dget_storage_size(dataset));  // 0 if unknown
  if (bytes <= stored + kUnstoredAllowanceBytes) return;
  throw DataError(
      fmt::format("{} claims {} bytes of values but the file stores {} (damaged header?)", where,
                  bytes, stored),
      Raised::kThisRank);
}

H5Dataset H5Dataset::open(const H5File& file, const std::string& name) {
  return open_as(file.hdf5_id(), name, file.path(), name);  // named as the deck spells it
}

H5Dataset H5Dataset::open(hid_t parent, const std::string& name) {
  return open_as(parent, name, "", path_in_file(parent, name));
}

H5Dataset H5Dataset::open_as(hid_t parent, const std::string& name, std::string file_path,
                             std::string shown_name) {
  H5Dataset d;
  d.file_path_ = std::move(file_path);
  d.name_ = std::move(shown_name);
  if (!has_object(parent, name)) {
    H5Eclear2(H5E_DEFAULT);
    throw DataError(d.where() + " is missing", Raised::kAllRanks);
  }
  {
    // The link is there: an object HDF5 cannot open has a damaged header (HDF5 1.14 refuses
    // some that 1.10 opens) or is a dangling link; HDF5 says which.
    const H5Id object(H5Oopen(parent, name.c_str(), H5P_DEFAULT));
    if (!object.valid()) {
      throw DataError(
          fmt::format("{} cannot be opened (damaged file?): {}", d.where(), take_h5_error_stack()),
          Raised::kAllRanks);
    }
    if (H5Iget_type(object.get()) != H5I_DATASET)
      throw DataError(d.where() + " is not a dataset", Raised::kAllRanks);
  }
  H5Id access(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_ACCESS)));
  DDPT_CHECK_H5(H5Pset_chunk_cache(access.get(), kChunkCacheSlots, kChunkCacheBytes, 1.0));
  d.id_ = H5Id(DDPT_CHECK_H5(H5Dopen2(parent, name.c_str(), access.get())));
  H5Id type(DDPT_CHECK_H5(H5Dget_type(d.id_.get())));
  d.stored_type_ = describe_h5_type(type.get());
  const auto dtype = tensor_type_for(type.get());
  if (!dtype)
    throw DataError(d.where() + " holds " + d.stored_type_ + ", which ddptrain does not read",
                    Raised::kAllRanks);
  d.dtype_ = *dtype;
  H5Id space(DDPT_CHECK_H5(H5Dget_space(d.id_.get())));
  const int rank = DDPT_CHECK_H5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  DDPT_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  for (const hsize_t n : dims) {
    if (n > static_cast<hsize_t>(INT64_MAX)) {
      throw DataError(fmt::format("{} has a dimension of {} (damaged header?)", d.where(), n),
                      Raised::kAllRanks);
    }
  }
  d.shape_.assign(dims.begin(), dims.end());
  return d;
}

H5Dataset H5Dataset::create(hid_t parent, const std::string& name, torch::ScalarType dtype,
                            const std::vector<int64_t>& shape, hid_t file_type,
                            int64_t chunk_bytes) {
  H5Dataset d;
  d.name_ = name;
  d.dtype_ = dtype;
  d.file_path_ = file_name_of(parent);
  d.shape_ = shape;
  const std::vector<hsize_t> dims = to_hsize(shape);
  H5Id space(DDPT_CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  H5Id properties(DDPT_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
  std::vector<hsize_t> chunk = dims;
  int64_t row_bytes = torch::elementSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) row_bytes *= shape[i];
  chunk[0] = static_cast<hsize_t>(std::clamp<int64_t>(chunk_bytes / std::max<int64_t>(row_bytes, 1),
                                                      1, std::max<int64_t>(shape[0], 1)));
  for (auto& c : chunk) c = std::max<hsize_t>(c, 1);
  DDPT_CHECK_H5(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()));
  DDPT_CHECK_H5(H5Pset_fletcher32(properties.get()));
  // No modification time in the header: the same content makes the same file, byte for byte.
  DDPT_CHECK_H5(H5Pset_obj_track_times(properties.get(), false));
  const hid_t stored = file_type >= 0 ? file_type : h5_memory_type(dtype);
  d.id_ = H5Id(DDPT_CHECK_H5(H5Dcreate2(parent, name.c_str(), stored, space.get(), H5P_DEFAULT,
                                        properties.get(), H5P_DEFAULT)));
  H5Id type(DDPT_CHECK_H5(H5Dget_type(d.id_.get())));
  d.stored_type_ = describe_h5_type(type.get());
  return d;
}

std::string H5Dataset::where() const {
  return (file_path_.empty() ? "" : "'" + file_path_ + "' ") + "dataset '" + name_ + "'";
}

torch::Tensor H5Dataset::allocate(const std::vector<int64_t>& shape) const {
  try {
    return torch::empty(shape, torch::TensorOptions().dtype(dtype_));
  } catch (const c10::Error& e) {
    // A damaged header's dimensions can ask for petabytes; so can a batch too large for memory.
    throw DataError(fmt::format("{}: reading [{}] {} values: {}", where(), fmt::join(shape, ", "),
                                stored_type_, e.what_without_backtrace()),
                    Raised::kThisRank);
  }
}

torch::Tensor H5Dataset::read_selection(hid_t file_space, int64_t rows) const {
  std::vector<int64_t> out_shape = shape_;
  if (out_shape.empty()) out_shape.push_back(1);
  out_shape[0] = rows;
  torch::Tensor out = allocate(out_shape);
  if (out.numel() == 0) return out;
  const std::vector<hsize_t> memory_dims = to_hsize(out_shape);
  H5Id memory_space(DDPT_CHECK_H5(
      H5Screate_simple(static_cast<int>(memory_dims.size()), memory_dims.data(), nullptr)));
  read_into(out.data_ptr(), memory_space.get(), file_space);
  return out;
}

void H5Dataset::read_into(void* out, hid_t memory_space, hid_t file_space) const {
  try {
    DDPT_CHECK_H5(
        H5Dread(id_.get(), h5_memory_type(dtype_), memory_space, file_space, H5P_DEFAULT, out));
  } catch (const H5Error& e) {
    throw DataError(where() + ": " + describe_failed_read(id_.get(), e.stack()), Raised::kThisRank);
  }
}

torch::Tensor H5Dataset::read_all() const {
  const H5Id type(DDPT_CHECK_H5(H5Dget_type(id_.get())));
  check_stored_size(id_.get(), bytes_of(shape_, static_cast<int64_t>(H5Tget_size(type.get()))),
                    where());
  torch::Tensor out = allocate(shape_);
  if (out.numel() > 0) read_into(out.data_ptr(), H5S_ALL, H5S_ALL);
  return out;
}

torch::Tensor H5Dataset::read_rows(const std::vector<int64_t>& sorted_rows) const {
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(id_.get())));
  DDPT_CHECK_H5(H5Sselect_none(file_space.get()));
  std::vector<hsize_t> start(shape_.size(), 0);
  std::vector<hsize_t> count = to_hsize(shape_);
  for (size_t i = 0; i < sorted_rows.size();) {
    size_t j = i + 1;
    while (j < sorted_rows.size() && sorted_rows[j] == sorted_rows[j - 1] + 1) ++j;
    start[0] = static_cast<hsize_t>(sorted_rows[i]);
    count[0] = static_cast<hsize_t>(j - i);
    DDPT_CHECK_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_OR, start.data(), nullptr,
                                      count.data(), nullptr));
    i = j;
  }
  return read_selection(file_space.get(), static_cast<int64_t>(sorted_rows.size()));
}

torch::Tensor H5Dataset::read_range(int64_t first, int64_t count) const {
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(id_.get())));
  std::vector<hsize_t> start(shape_.size(), 0);
  std::vector<hsize_t> extent = to_hsize(shape_);
  start[0] = static_cast<hsize_t>(first);
  extent[0] = static_cast<hsize_t>(count);
  DDPT_CHECK_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                    extent.data(), nullptr));
  return read_selection(file_space.get(), count);
}

void H5Dataset::write_rows(int64_t first, const torch::Tensor& block) {
  const torch::Tensor data = block.detach().to(dtype_).cpu().contiguous();
  H5Id file_space(DDPT_CHECK_H5(H5Dget_space(id_.get())));
  std::vector<hsize_t> memory_dims = to_hsize(shape_);
  memory_dims[0] = static_cast<hsize_t>(data.size(0));
  H5Id memory_space(DDPT_CHECK_H5(
      H5Screate_simple(static_cast<int>(memory_dims.size()), memory_dims.data(), nullptr)));
  if (data.size(0) == 0) {
    DDPT_CHECK_H5(H5Sselect_none(file_space.get()));
    DDPT_CHECK_H5(H5Sselect_none(memory_space.get()));
  } else {
    std::vector<hsize_t> start(shape_.size(), 0);
    start[0] = static_cast<hsize_t>(first);
    DDPT_CHECK_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                      memory_dims.data(), nullptr));
  }
  const H5Id transfer = transfer_for(id_.get());
  DDPT_CHECK_H5(H5Dwrite(id_.get(), h5_memory_type(dtype_), memory_space.get(), file_space.get(),
                         transfer.get(), data.data_ptr()));
}

std::vector<ElementBox> element_boxes(const std::vector<int64_t>& shape, int64_t first,
                                      int64_t count) {
  const std::vector<int64_t> dims = shape.empty() ? std::vector<int64_t>{1} : shape;
  std::vector<hsize_t> start(dims.size(), 0);
  std::vector<hsize_t> extent(dims.size(), 1);
  std::vector<ElementBox> boxes;
  add_run_boxes(dims, 0, start, extent, first, first + count, boxes);
  return boxes;
}

// Each box is read or written on its own, with a memory space of the box's shape: HDF5 then maps
// the box to a contiguous stretch of memory directly. (One call with a union of hyperslabs and a
// 1-D memory space took several times as long to write a ZeRO-1 checkpoint: benchmarks.md,
// "Choices measured": boxes one by one.)
void H5Dataset::transfer_elements(int64_t first, const torch::Tensor& values, bool write) const {
  const std::vector<ElementBox> boxes = element_boxes(shape_, first, values.numel());
  // A collective write is one H5Dwrite per box on every rank: every rank makes the most calls a
  // run can need (2 x rank - 1), those past its own boxes with empty selections.
  const size_t calls = write ? 2 * std::max<size_t>(shape_.size(), 1) - 1 : boxes.size();
  const H5Id transfer = write ? transfer_for(id_.get()) : H5Id();
  auto* data = static_cast<char*>(values.data_ptr());
  for (size_t k = 0; k < calls; ++k) {
    H5Id file_space(DDPT_CHECK_H5(H5Dget_space(id_.get())));
    hsize_t none[1] = {0};
    H5Id memory_space;
    if (k < boxes.size()) {
      const ElementBox& box = boxes[k];
      DDPT_CHECK_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, box.start.data(), nullptr,
                                        box.extent.data(), nullptr));
      memory_space = H5Id(DDPT_CHECK_H5(
          H5Screate_simple(static_cast<int>(box.extent.size()), box.extent.data(), nullptr)));
    } else {
      DDPT_CHECK_H5(H5Sselect_none(file_space.get()));
      memory_space = H5Id(DDPT_CHECK_H5(H5Screate_simple(1, none, nullptr)));
      DDPT_CHECK_H5(H5Sselect_none(memory_space.get()));
    }
    if (write) {
      DDPT_CHECK_H5(H5Dwrite(id_.get(), h5_memory_type(dtype_), memory_space.get(),
                             file_space.get(), transfer.get(), data));
    } else {
      read_into(data, memory_space.get(), file_space.get());
    }
    if (k < boxes.size()) {
      int64_t elements = 1;
      for (const hsize_t e : boxes[k].extent) elements *= static_cast<int64_t>(e);
      data += elements * values.element_size();
    }
  }
}

torch::Tensor H5Dataset::read_elements(int64_t first, int64_t count) const {
  torch::Tensor out = allocate({count});
  transfer_elements(first, out, /*write=*/false);
  return out;
}

void H5Dataset::write_elements(int64_t first, const torch::Tensor& values) {
  const torch::Tensor data = values.detach().to(dtype_).cpu().contiguous().view(-1);
  transfer_elements(first, data, /*write=*/true);
}

}  // namespace ddpt
