#include "data/row_subset.hpp"

#include <fmt/format.h>

namespace ddpt {

RowSubset::RowSubset(std::shared_ptr<const Dataset> base, int64_t first, int64_t count,
                     std::string role)
    : base_(std::move(base)), first_(first), count_(count), role_(std::move(role)) {}

std::string RowSubset::describe() const {
  return fmt::format("{} rows {}..{} of {}", role_, first_, first_ + count_ - 1, base_->describe());
}

}  // namespace ddpt
