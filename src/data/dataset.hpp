// A dataset is rows addressed by index; every rank can read any row it is asked for (from memory
// or, for files, from disk on demand).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace ddpt {

struct Batch {
  torch::Tensor inputs;   // [B, sample_shape...] float32, or [B, block] int64 token ids
  torch::Tensor targets;  // [B] int64 labels, [B, outputs] float32 values, or [B, block] int64
};

// What the rows hold, which decides the loss and the evaluation metrics.
enum class Task {
  kClassification,  // integer labels; cross-entropy; accuracy
  kRegression,      // float targets; mean squared error
  kNextToken,       // token windows; cross-entropy at every position; perplexity
};

struct DatasetInfo {
  Task task = Task::kClassification;
  std::vector<int64_t> sample_shape;  // shape of one input row
  int64_t outputs = 0;                // classes, regression targets per row, or vocabulary size
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Rows `indices` (1-D int64) in that order.
  virtual Batch get(const torch::Tensor& indices) const = 0;
  virtual DatasetInfo info() const = 0;
  virtual std::string describe() const = 0;
};

const char* task_name(Task task);

}  // namespace ddpt
