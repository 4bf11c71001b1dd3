// The training state a checkpoint keeps, as parts that save and load themselves.
//
// Each stateful part of a run (optimizer moments, the loss scaler, the spike guard, early
// stopping, the moving average, the RNG, the metrics row in progress, the schedule and sampler
// position) implements Checkpointed and is added to a CheckpointRegistry; the checkpoint writer
// (io/checkpoint) walks the registry in order. Parts see only StateWriter/StateReader: named
// tensors, per-rank rows and typed scalars under a path of groups, never HDF5 itself.
//
// Saving is collective: every rank calls every part's save() in the same order with the same
// names, and parts write replicated values (identical on every rank) as tensor() and per-rank
// values as rank_row(). A part that shards its state over ranks adds a slice writer here, not a
// special case in the checkpoint writer.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ddpt {

// The rank whose value of a replicated tensor (StateWriter::tensor) lands in the file. The other
// ranks' values are never read: their writers keep only the shape and dtype (a checkpoint.async
// snapshot copies nothing for them, and no GPU tensor goes to the host for them).
constexpr int kReplicatedTensorRank = 0;

class StateWriter {
 public:
  virtual ~StateWriter() = default;
  // The writer of group `name` below this one (made by the first part that asks for it).
  virtual std::unique_ptr<StateWriter> group(const std::string& name) = 0;
  // A replicated tensor: every rank holds the same value; one copy lands in the file, rank
  // kReplicatedTensorRank's (below).
  virtual void tensor(const std::string& name, const torch::Tensor& value) = 0;
  // Per-rank state: this rank's `row` becomes row `rank` of a [world size, row.numel()] dataset.
  virtual void rank_row(const std::string& name, const torch::Tensor& row) = 0;
  // A tensor sharded over ranks (ZeRO-1): the dataset has `shape` (the same on every rank), and
  // this rank's 1-D `part` fills its elements [first, first + part.numel()) in row-major order.
  // The parts of all ranks together fill it; a rank without a part passes an empty tensor of the
  // dtype. Reads back like any tensor.
  virtual void tensor_part(const std::string& name, const std::vector<int64_t>& shape,
                           int64_t first, const torch::Tensor& part) = 0;
  virtual void scalar(const std::string& name, int64_t value) = 0;
  virtual void scalar(const std::string& name, double value) = 0;
  virtual void scalar(const std::string& name, const std::string& value) = 0;
};

// `stored`, read from the dataset `name`, in the shape of `target`, which it is loaded into: a
// damaged file can hold a tensor of another size under the right name and model signature (found
// by tests/fuzz); that is a DataError (exit 3), not LibTorch's reshape error.
torch::Tensor stored_as(const torch::Tensor& stored, const torch::Tensor& target,
                        const std::string& name);

class StateReader {
 public:
  virtual ~StateReader() = default;
  // Whether a group, tensor or scalar `name` is here (files of older versions lack some).
  virtual bool has(const std::string& name) const = 0;
  virtual std::unique_ptr<StateReader> group(const std::string& name) const = 0;
  virtual torch::Tensor tensor(const std::string& name) const = 0;
  // Elements [first, first + count) of tensor `name` in row-major order, 1-D: the part of a
  // tensor (sharded or not when saved) that this rank owns now.
  virtual torch::Tensor tensor_part(const std::string& name, int64_t first,
                                    int64_t count) const = 0;
  // Every saved rank's row, [saved world size, n].
  virtual torch::Tensor rank_rows(const std::string& name) const = 0;
  virtual int64_t int_scalar(const std::string& name) const = 0;
  virtual double double_scalar(const std::string& name) const = 0;
  virtual std::string string_scalar(const std::string& name) const = 0;

  // This rank, the world size now, and the world size that wrote the file (they may differ: a
  // checkpoint of N ranks loads on M).
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int64_t saved_world_size() const { return saved_world_size_; }

 protected:
  StateReader(int rank, int world_size, int64_t saved_world_size)
      : rank_(rank), world_size_(world_size), saved_world_size_(saved_world_size) {}

 private:
  int rank_;
  int world_size_;
  int64_t saved_world_size_;
};

class Checkpointed {
 public:
  virtual ~Checkpointed() = default;
  // Writes under the checkpoint's root (a part names its own groups).
  virtual void save(StateWriter& root) const = 0;
  // Reads what save() wrote; a part missing from an older file keeps its current state.
  virtual void load(const StateReader& root) = 0;
};

// The trainable parameters where no rank holds them whole (ZeRO-3): each rank writes and reads
// its slices of them in /model, in the parameters' shapes, so the file is what an unsharded run
// writes. The checkpoint leaves the tensors it holds to it.
class CheckpointedWeights {
 public:
  virtual ~CheckpointedWeights() = default;
  virtual bool holds(const std::string& name) const = 0;
  // Collective: `model` is the writer (reader) of /model.
  virtual void save(StateWriter& model) const = 0;
  virtual void load(const StateReader& model) = 0;
  // The tensors `group` has of those it holds (a moving average's /ema), the others kept.
  virtual void load_present(const StateReader& group) = 0;
};

// The parts of a run's state, in the order they are written and read. Holds references: the
// parts outlive the registry.
class CheckpointRegistry {
 public:
  void add(Checkpointed& part) { parts_.push_back(&part); }
  const std::vector<Checkpointed*>& parts() const { return parts_; }

 private:
  std::vector<Checkpointed*> parts_;
};

}  // namespace ddpt
