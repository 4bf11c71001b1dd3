// Rows [first, first + count) of another dataset, renumbered from 0: the training and validation
// parts of one dataset split by data.val_fraction.
#pragma once

#include <memory>

#include "data/dataset.hpp"

namespace ddpt {

class RowSubset final : public Dataset {
 public:
  RowSubset(std::shared_ptr<const Dataset> base, int64_t first, int64_t count, std::string role);
  int64_t size() const override { return count_; }
  Batch get(const torch::Tensor& indices) const override { return base_->get(indices + first_); }
  DatasetInfo info() const override { return base_->info(); }
  std::string describe() const override;

 private:
  std::shared_ptr<const Dataset> base_;
  int64_t first_;
  int64_t count_;
  std::string role_;
};

}  // namespace ddpt
