// A dataset is rows addressed by index; every rank holds (or can read) any row it is asked for.
#pragma once

#include <torch/torch.h>

#include <string>

namespace ddpt {

struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Rows `indices` (1-D int64) in that order.
  virtual Batch get(const torch::Tensor& indices) const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace ddpt
