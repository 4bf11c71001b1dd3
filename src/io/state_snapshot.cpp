#include "io/state_snapshot.hpp"

#include <torch/cuda.h>

#include <cstring>
#include <map>

#include "h5/h5_lock.hpp"

namespace ddpt {

struct StateSnapshot::Call {
  enum class Kind { kGroup, kTensor, kRankRow, kTensorPart, kInt, kDouble, kString };
  Kind kind = Kind::kGroup;
  std::string group;  // path of the group it is made on ("" is the root)
  std::string name;
  torch::Tensor tensor;
  std::vector<int64_t> shape;  // kTensorPart
  int64_t integer = 0;         // kInt; kTensorPart: the first element
  double real = 0;
  std::string text;
  bool shape_only = false;  // `tensor` stands in for a replicated tensor another rank writes
};

namespace {

// A tensor of `value`'s shape and dtype that holds one element: all a rank whose value of a
// replicated tensor is not written needs to take part in the collective write.
torch::Tensor shape_of(const torch::Tensor& value) {
  return torch::zeros({}, torch::TensorOptions().dtype(value.scalar_type())).expand(value.sizes());
}

}  // namespace

StateSnapshot::StateSnapshot(int rank, bool copy, std::vector<torch::Tensor> host_memory)
    : StateSnapshot(std::make_shared<std::vector<Call>>(), "", rank, copy,
                    std::make_shared<Spares>(Spares{std::move(host_memory), 0})) {}

StateSnapshot::StateSnapshot(std::shared_ptr<std::vector<Call>> calls, std::string path, int rank,
                             bool copy, std::shared_ptr<Spares> spares)
    : calls_(std::move(calls)),
      path_(std::move(path)),
      rank_(rank),
      copy_(copy),
      spares_(std::move(spares)) {}

void StateSnapshot::record(Call call) {
  call.group = path_;
  calls_->push_back(std::move(call));
}

torch::Tensor StateSnapshot::keep(const torch::Tensor& value) const {
  const torch::Tensor data = value.detach();
  if (!copy_) return data;
  torch::Tensor host;
  if (spares_->next < spares_->tensors.size()) {
    torch::Tensor& spare = spares_->tensors[spares_->next++];
    if (spare.sizes() == data.sizes() && spare.dtype() == data.dtype() &&
        spare.is_pinned() == data.is_cuda()) {
      host = std::move(spare);
    }
  }
  // GPU tensors go to pinned memory without blocking (wait_for_copies() waits for them).
  if (!host.defined()) {
    host = torch::empty(data.sizes(), data.options()
                                          .device(torch::kCPU)
                                          .memory_format(torch::MemoryFormat::Contiguous)
                                          .pinned_memory(data.is_cuda()));
  }
  host.copy_(data, /*non_blocking=*/data.is_cuda());
  return host;
}

std::unique_ptr<StateWriter> StateSnapshot::group(const std::string& name) {
  Call call;
  call.kind = Call::Kind::kGroup;
  call.name = name;
  record(std::move(call));
  return std::unique_ptr<StateWriter>(
      new StateSnapshot(calls_, path_.empty() ? name : path_ + "/" + name, rank_, copy_, spares_));
}

void StateSnapshot::tensor(const std::string& name, const torch::Tensor& value) {
  Call call;
  call.kind = Call::Kind::kTensor;
  call.name = name;
  call.shape_only = rank_ != kReplicatedTensorRank;
  call.tensor = call.shape_only ? shape_of(value) : keep(value);
  record(std::move(call));
}

void StateSnapshot::rank_row(const std::string& name, const torch::Tensor& row) {
  Call call;
  call.kind = Call::Kind::kRankRow;
  call.name = name;
  call.tensor = keep(row);
  record(std::move(call));
}

void StateSnapshot::tensor_part(const std::string& name, const std::vector<int64_t>& shape,
                                int64_t first, const torch::Tensor& part) {
  Call call;
  call.kind = Call::Kind::kTensorPart;
  call.name = name;
  call.shape = shape;
  call.integer = first;
  call.tensor = keep(part);
  record(std::move(call));
}

void StateSnapshot::scalar(const std::string& name, int64_t value) {
  Call call;
  call.kind = Call::Kind::kInt;
  call.name = name;
  call.integer = value;
  record(std::move(call));
}

void StateSnapshot::scalar(const std::string& name, double value) {
  Call call;
  call.kind = Call::Kind::kDouble;
  call.name = name;
  call.real = value;
  record(std::move(call));
}

void StateSnapshot::scalar(const std::string& name, const std::string& value) {
  Call call;
  call.kind = Call::Kind::kString;
  call.name = name;
  call.text = value;
  record(std::move(call));
}

void StateSnapshot::wait_for_copies() const {
  for (const Call& call : *calls_) {
    if (call.tensor.defined() && call.tensor.is_pinned()) {
      torch::cuda::synchronize();  // the copies were queued on the GPU's streams
      return;
    }
  }
}

std::vector<torch::Tensor> allocate_host_memory(const std::vector<TensorLayout>& layout) {
  std::vector<torch::Tensor> buffers;
  buffers.reserve(layout.size());
  for (const TensorLayout& buffer : layout) {
    buffers.push_back(torch::empty(buffer.sizes, torch::TensorOptions()
                                                     .dtype(buffer.dtype)
                                                     .device(torch::kCPU)
                                                     .pinned_memory(buffer.pinned)));
    // memset rather than zero_(): no intra-op thread pool from this background thread.
    std::memset(buffers.back().data_ptr(), 0, buffers.back().nbytes());
  }
  return buffers;
}

std::vector<torch::Tensor> StateSnapshot::release_host_memory() {
  std::vector<torch::Tensor> buffers;
  for (Call& call : *calls_) {
    if (call.tensor.defined() && !call.shape_only) buffers.push_back(std::move(call.tensor));
  }
  return buffers;
}

std::vector<TensorLayout> StateSnapshot::host_memory_layout() const {
  std::vector<TensorLayout> layout;
  for (const Call& call : *calls_) {
    if (!call.tensor.defined() || call.shape_only) continue;
    layout.push_back({call.tensor.sizes().vec(), call.tensor.scalar_type(), call.tensor.is_cuda()});
  }
  return layout;
}

int64_t StateSnapshot::file_data_bytes(int world_size) const {
  int64_t bytes = 0;
  for (const Call& call : *calls_) {
    switch (call.kind) {
      case Call::Kind::kTensor:  // a shape-only stand-in counts in full too
        bytes += call.tensor.numel() * static_cast<int64_t>(call.tensor.element_size());
        break;
      case Call::Kind::kRankRow:
        bytes += static_cast<int64_t>(call.tensor.nbytes()) * world_size;
        break;
      case Call::Kind::kTensorPart: {
        int64_t elements = 1;
        for (const int64_t d : call.shape) elements *= d;
        bytes += elements * static_cast<int64_t>(call.tensor.element_size());
        break;
      }
      default:
        break;  // groups and attributes: a few hundred bytes of metadata each
    }
  }
  return bytes;
}

namespace {

// The writers of the groups made so far, by path. Closing one is an HDF5 call, so they are closed
// under the HDF5 lock however the replay ends, a write that failed and unwinds included (another
// thread may be in HDF5: the batch prefetcher, or training while this writes in the background).
class OpenGroups {
 public:
  OpenGroups() = default;
  OpenGroups(const OpenGroups&) = delete;
  OpenGroups& operator=(const OpenGroups&) = delete;
  ~OpenGroups() {
    const Hdf5Lock lock;
    writers_.clear();
  }
  std::unique_ptr<StateWriter>& operator[](const std::string& path) { return writers_[path]; }
  StateWriter& at(const std::string& path) const { return *writers_.at(path); }

 private:
  std::map<std::string, std::unique_ptr<StateWriter>> writers_;
};

}  // namespace

void StateSnapshot::replay(StateWriter& root) const {
  // Kept open as a direct write keeps them.
  OpenGroups groups;
  auto writer_of = [&](const std::string& path) -> StateWriter& {
    return path.empty() ? root : groups.at(path);
  };
  for (const Call& call : *calls_) {
    const Hdf5Lock lock;
    StateWriter& writer = writer_of(call.group);
    switch (call.kind) {
      case Call::Kind::kGroup: {
        const std::string path = call.group.empty() ? call.name : call.group + "/" + call.name;
        groups[path] = writer.group(call.name);
        break;
      }
      case Call::Kind::kTensor:
        writer.tensor(call.name, call.tensor);
        break;
      case Call::Kind::kRankRow:
        writer.rank_row(call.name, call.tensor);
        break;
      case Call::Kind::kTensorPart:
        writer.tensor_part(call.name, call.shape, call.integer, call.tensor);
        break;
      case Call::Kind::kInt:
        writer.scalar(call.name, call.integer);
        break;
      case Call::Kind::kDouble:
        writer.scalar(call.name, call.real);
        break;
      case Call::Kind::kString:
        writer.scalar(call.name, call.text);
        break;
    }
  }
}

}  // namespace ddpt
